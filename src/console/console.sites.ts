import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { type Static, Type } from 'typebox';
import { LABEL_MAX } from '../accounts/account.names.js';
import { createCredential } from '../accounts/account.service.js';
import { getPage, type PageNode, pageTree } from '../content/pages/page.service.js';
import { INT32_MAX } from '../content/shared/schemas.js';
import { BadRequestError, NotFoundError } from '../errors.js';
import { isVerifiedClient, listClients } from '../oauth/clients/client.service.js';
import { listConnections } from '../oauth/connections/connection.service.js';
import { SCOPE_TITLES } from '../oauth/scopes.js';
import { formValue } from '../web/forms.js';
import { CONSOLE_PATH, type ConsoleContext, type ConsoleDeps, changeOrFormAgain, consoleHandler, isolated } from './console.http.js';
import { requireUserSite, revokeSiteConnection, revokeSiteCredential, siteCredentials } from './console.service.js';

// An id as the console writes it in its links: decimal, no leading zero. `01` or `1e0` would
// otherwise be coerced to 1, another address for the same website.
const Id = Type.String({ pattern: '^[1-9][0-9]{0,9}$' });
const SiteParams = Type.Object({ siteId: Id });
const ConnectionParams = Type.Object({ siteId: Id, connectionId: Type.String({ pattern: '^con_[\\w-]{1,64}$' }) });
const CredentialParams = Type.Object({ siteId: Id, apiId: Type.String({ pattern: '^ak_[\\w-]{1,64}$' }) });
const PageParams = Type.Object({ siteId: Id, pageId: Id });

type SiteRoute = Static<typeof SiteParams>;
type ConnectionRoute = Static<typeof ConnectionParams>;
type CredentialRoute = Static<typeof CredentialParams>;
type PageRoute = Static<typeof PageParams>;

/** An id of a route's path as a number; past the integer columns' range it names nothing. */
function idOf(id: string): number {
  const value = Number(id);
  if (value > INT32_MAX) throw new NotFoundError('There is no such website or page.');
  return value;
}

const sitePath = (siteId: number, rest = '') => `${CONSOLE_PATH}/sites/${siteId}${rest}`;

/** A website's connections, API credentials and page tree: each an id the user must own. */
export async function registerSitePages(app: FastifyInstance, deps: ConsoleDeps): Promise<void> {
  const scope = app.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = deps;

  scope.get(
    `${CONSOLE_PATH}/sites/:siteId`,
    { schema: { hide: true, params: SiteParams } },
    consoleHandler<SiteRoute>(deps, 'GET', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      const site = await requireUserSite(db, ctx.user.id, siteId);
      const [connections, clients] = await Promise.all([listConnections(db, siteId), listClients(db)]);
      const sourceOf = new Map(clients.map((client) => [client.client_id, client.source]));
      return ctx.page(200, 'console-connections', 'sites', {
        site,
        tab: 'connections',
        connections: connections.map((c) => ({
          ...c,
          verified: isVerifiedClient(sourceOf.get(c.client_id)),
          scopeTitles: c.scopes.map((s) => SCOPE_TITLES[s] ?? s),
        })),
      });
    }),
  );

  scope.get(
    `${CONSOLE_PATH}/sites/:siteId/connections/:connectionId/revoke`,
    { schema: { hide: true, params: ConnectionParams } },
    consoleHandler<ConnectionRoute>(deps, 'GET', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      const { connectionId } = ctx.params;
      const site = await requireUserSite(db, ctx.user.id, siteId);
      // Unknown here (or another website's) is the 404 the POST gives; one that ended is this website's, so say so.
      const connection = (await listConnections(db, siteId)).find((c) => c.id === connectionId);
      if (!connection) throw new NotFoundError(`Website ${siteId} has no connection ${connectionId}.`);
      if (connection.status !== 'active') return ctx.seeOther(sitePath(siteId), { error: 'That connection has already ended.' });
      return ctx.page(200, 'console-confirm', 'sites', {
        heading: `Revoke ${isolated(connection.client_name)}?`,
        message: `${isolated(connection.client_name)} loses access to ${site.name} at once: its next request is refused. Your other websites' connections are not affected. To connect it again, it has to ask you again.`,
        action: sitePath(siteId, `/connections/${connectionId}/revoke`),
        confirm: 'Revoke access',
        cancel: sitePath(siteId),
      });
    }),
  );

  scope.post(
    `${CONSOLE_PATH}/sites/:siteId/connections/:connectionId/revoke`,
    { schema: { hide: true, params: ConnectionParams } },
    consoleHandler<ConnectionRoute>(deps, 'POST', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      const { connectionId } = ctx.params;
      await revokeSiteConnection(db, ctx.user.id, siteId, connectionId);
      return ctx.seeOther(sitePath(siteId), { notice: 'The connection is revoked. Its tokens no longer work.' });
    }),
  );

  const credentialsPage = async (ctx: ConsoleContext<SiteRoute>, status: number, data: Record<string, unknown> = {}) => {
    const siteId = idOf(ctx.params.siteId);
    const site = await requireUserSite(db, ctx.user.id, siteId);
    return ctx.page(status, 'console-credentials', 'sites', {
      site,
      tab: 'credentials',
      credentials: await siteCredentials(db, ctx.user.id, siteId),
      pages: pageChoices(await pageTree(db, siteId)),
      label: '',
      defaultPage: '',
      labelMax: LABEL_MAX,
      base: deps.config.publicUrl,
      ...data,
    });
  };

  scope.get(
    `${CONSOLE_PATH}/sites/:siteId/credentials`,
    { schema: { hide: true, params: SiteParams } },
    consoleHandler<SiteRoute>(deps, 'GET', (ctx) => credentialsPage(ctx, 200)),
  );

  scope.post(
    `${CONSOLE_PATH}/sites/:siteId/credentials`,
    { schema: { hide: true, params: SiteParams } },
    consoleHandler<SiteRoute>(deps, 'POST', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      await requireUserSite(db, ctx.user.id, siteId);
      const label = formValue(ctx.form, 'label');
      const defaultPage = formValue(ctx.form, 'defaultPage');
      const created = await changeOrFormAgain(
        (error) => credentialsPage(ctx, 400, { label, defaultPage, error }),
        () => createCredential(db, siteId, label, defaultPage === '' ? null : pageIdOf(defaultPage)),
      );
      if (!created) return ctx.reply;
      const { apiId, apiKey } = created.result;
      return ctx.seeOther(sitePath(siteId, '/credentials'), { credential: { apiId, apiKey, label: created.result.label } });
    }),
  );

  scope.get(
    `${CONSOLE_PATH}/sites/:siteId/credentials/:apiId/revoke`,
    { schema: { hide: true, params: CredentialParams } },
    consoleHandler<CredentialRoute>(deps, 'GET', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      const { apiId } = ctx.params;
      const credential = (await siteCredentials(db, ctx.user.id, siteId)).find((c) => c.api_id === apiId);
      if (!credential) throw new NotFoundError(`Website ${siteId} has no API credential ${apiId}.`);
      if (credential.revoked_at) return ctx.seeOther(sitePath(siteId, '/credentials'), { error: 'That credential is already revoked.' });
      return ctx.page(200, 'console-confirm', 'sites', {
        heading: `Revoke the credential “${credential.label || credential.api_id}”?`,
        message: `Requests signed with API ID ${credential.api_id} are refused from now on. This cannot be undone; create a new credential if you need one.`,
        action: sitePath(siteId, `/credentials/${apiId}/revoke`),
        confirm: 'Revoke credential',
        cancel: sitePath(siteId, '/credentials'),
      });
    }),
  );

  scope.post(
    `${CONSOLE_PATH}/sites/:siteId/credentials/:apiId/revoke`,
    { schema: { hide: true, params: CredentialParams } },
    consoleHandler<CredentialRoute>(deps, 'POST', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      const { apiId } = ctx.params;
      await revokeSiteCredential(db, ctx.user.id, siteId, apiId);
      return ctx.seeOther(sitePath(siteId, '/credentials'), { notice: `The credential ${apiId} is revoked.` });
    }),
  );

  scope.get(
    `${CONSOLE_PATH}/sites/:siteId/pages`,
    { schema: { hide: true, params: SiteParams } },
    consoleHandler<SiteRoute>(deps, 'GET', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      const site = await requireUserSite(db, ctx.user.id, siteId);
      return ctx.page(200, 'console-pages', 'sites', { site, tab: 'pages', tree: await pageTree(db, siteId) });
    }),
  );

  // The page as the API returns it, readable with the console's sign-in (the API itself wants a credential).
  scope.get(
    `${CONSOLE_PATH}/sites/:siteId/pages/:pageId/json`,
    { schema: { hide: true, params: PageParams } },
    consoleHandler<PageRoute>(deps, 'GET', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      const pageId = idOf(ctx.params.pageId);
      await requireUserSite(db, ctx.user.id, siteId);
      const page = await getPage(db, siteId, pageId);
      return ctx.reply
        .type('application/json; charset=utf-8')
        .header('x-content-type-options', 'nosniff')
        .send(JSON.stringify(page, null, 2));
    }),
  );
}

/** The website's pages as the default-page choices: in tree order, each title indented by its depth. */
function pageChoices(tree: readonly PageNode[], depth = 0): Array<{ id: number; title: string }> {
  return tree.flatMap((node) => [
    { id: node.id, title: `${'\u2003'.repeat(depth)}${node.title}` },
    ...pageChoices(node.children, depth + 1),
  ]);
}

/** A page id chosen in the form: refused like any page the website lacks when it is not one. */
function pageIdOf(value: string): number {
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new BadRequestError('Choose one of the website’s pages as the default page, or none.');
  return Number(value);
}
