import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { type Static, Type } from 'typebox';
import {
  CLIENT_NAME_MAX,
  createClient,
  deleteOwnedClient,
  findOwnedClient,
  listOwnedClients,
  updateOwnedRedirectUris,
} from '../oauth/clients/client.service.js';
import { formValue } from '../web/forms.js';
import { CONSOLE_PATH, type ConsoleContext, type ConsoleDeps, changeOrFormAgain, consoleHandler, isolated } from './console.http.js';

const ClientParams = Type.Object({ clientId: Type.String({ pattern: '^[\\w-]{1,64}$' }) });
type ClientRoute = Static<typeof ClientParams>;
const CLIENTS = `${CONSOLE_PATH}/clients`;

/** One URI a line (or separated by spaces): how a person pastes a list into a text area. */
function urisOf(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}

/** The OAuth clients a user registered: theirs alone; anyone else's id is a 404. */
export async function registerClientPages(app: FastifyInstance, deps: ConsoleDeps): Promise<void> {
  const scope = app.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = deps;
  const listPage = async (ctx: ConsoleContext, status: number, data: Record<string, unknown> = {}) =>
    ctx.page(status, 'console-clients', 'clients', {
      clients: await listOwnedClients(db, ctx.user.id),
      name: '',
      redirectUris: '',
      nameMax: CLIENT_NAME_MAX,
      example: `${deps.config.publicUrl.startsWith('https:') ? 'https://app.example' : 'http://localhost:3000'}/callback`,
      ...data,
    });

  scope.get(
    CLIENTS,
    { schema: { hide: true } },
    consoleHandler(deps, 'GET', (ctx) => listPage(ctx, 200)),
  );

  scope.post(
    CLIENTS,
    { schema: { hide: true } },
    consoleHandler(deps, 'POST', async (ctx) => {
      const name = formValue(ctx.form, 'name').trim();
      const redirectUris = formValue(ctx.form, 'redirect_uris');
      const created = await changeOrFormAgain(
        (error) => listPage(ctx, 400, { name, redirectUris, error }),
        // createClient holds the rules for names (clientNameProblem) and redirect URIs, for the CLI too.
        () => createClient(db, { name, redirectUris: urisOf(redirectUris), ownerUserId: ctx.user.id }),
      );
      if (!created) return ctx.reply;
      const { clientId } = created.result;
      return ctx.seeOther(`${CLIENTS}/${clientId}`, { clientId, notice: `${isolated(name)} is registered.` });
    }),
  );

  const clientPage = async (ctx: ConsoleContext<ClientRoute>, status: number, data: Record<string, unknown> = {}) => {
    const { clientId } = ctx.params;
    const client = await findOwnedClient(db, ctx.user.id, clientId);
    return ctx.page(status, 'console-client', 'clients', {
      client,
      redirectUris: client.redirect_uris.join('\n'),
      authorizeExample: `${deps.config.publicUrl}/api/auth/authorize?client_id=${client.client_id}&response_type=code&redirect_uri=…&code_challenge=…&code_challenge_method=S256&scope=everything:read&resource=${deps.config.publicUrl}`,
      ...data,
    });
  };

  scope.get(
    `${CLIENTS}/:clientId`,
    { schema: { hide: true, params: ClientParams } },
    consoleHandler<ClientRoute>(deps, 'GET', (ctx) => clientPage(ctx, 200)),
  );

  scope.post(
    `${CLIENTS}/:clientId`,
    { schema: { hide: true, params: ClientParams } },
    consoleHandler<ClientRoute>(deps, 'POST', async (ctx) => {
      const { clientId } = ctx.params;
      const redirectUris = formValue(ctx.form, 'redirect_uris');
      const saved = await changeOrFormAgain(
        (error) => clientPage(ctx, 400, { redirectUris, error }),
        () => updateOwnedRedirectUris(db, ctx.user.id, clientId, urisOf(redirectUris)),
      );
      if (!saved) return ctx.reply;
      return ctx.seeOther(`${CLIENTS}/${clientId}`, { notice: 'The redirect URIs are saved.' });
    }),
  );

  scope.get(
    `${CLIENTS}/:clientId/delete`,
    { schema: { hide: true, params: ClientParams } },
    consoleHandler<ClientRoute>(deps, 'GET', async (ctx) => {
      const { clientId } = ctx.params;
      const client = await findOwnedClient(db, ctx.user.id, clientId);
      return ctx.page(200, 'console-confirm', 'clients', {
        heading: `Delete ${isolated(client.name)}?`,
        message: `Every connection made with ${isolated(client.name)}, on any website, ends now, and authorization requests with client_id ${client.client_id} are refused. This cannot be undone.`,
        action: `${CLIENTS}/${clientId}/delete`,
        confirm: 'Delete client',
        cancel: `${CLIENTS}/${clientId}`,
      });
    }),
  );

  scope.post(
    `${CLIENTS}/:clientId/delete`,
    { schema: { hide: true, params: ClientParams } },
    consoleHandler<ClientRoute>(deps, 'POST', async (ctx) => {
      const { clientId } = ctx.params;
      await deleteOwnedClient(db, ctx.user.id, clientId);
      return ctx.seeOther(CLIENTS, { notice: `The client ${clientId} is deleted.` });
    }),
  );
}
