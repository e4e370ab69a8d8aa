import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { type Static, Type } from 'typebox';
import { LABEL_MAX } from '../accounts/account.names.js';
import { createCredential } from '../accounts/account.service.js';
import { GRANTING_SCOPES } from '../auth/scopes.js';
import type { ChangeEntry } from '../content/history/feed.service.js';
import { getPage, type PageNode, pageTree } from '../content/pages/page.service.js';
import { BadRequestError, NotFoundError } from '../errors.js';
import { isVerifiedClient, listClients } from '../oauth/clients/client.service.js';
import {
  type Application,
  CONNECTION_KIND_TITLES,
  type ConnectionKind,
  listApplications,
} from '../oauth/connections/connection.service.js';
import { scopeTitle } from '../oauth/scopes.js';
import { formValue, formValues } from '../web/forms.js';
import { changeLine, defaultUndoSince } from './console.history.js';
import { CONSOLE_PATH, type ConsoleContext, type ConsoleDeps, changeOrFormAgain, consoleHandler, isolated } from './console.http.js';
import {
  ApplicationParams,
  type ApplicationRoute,
  applicationPath,
  Id,
  idOf,
  SiteParams,
  type SiteRoute,
  sitePath,
} from './console.paths.js';
import {
  applicationChanges,
  requireUserSite,
  revokeSiteApplication,
  revokeSiteCredential,
  siteApplication,
  siteCredentials,
} from './console.service.js';

const CredentialParams = Type.Object({ siteId: Id, apiId: Type.String({ pattern: '^ak_[\\w-]{1,64}$' }) });
const PageParams = Type.Object({ siteId: Id, pageId: Id });

type CredentialRoute = Static<typeof CredentialParams>;
type PageRoute = Static<typeof PageParams>;

/** How many of an application's latest changes its card lists; the records' pages have the rest. */
const RECENT_CHANGES = 10;

/** What the application's live connections are for (what its ended ones were, once none is live), in a fixed order. */
function kindsOf(app: Application): string[] {
  const live = app.connections.filter((c) => c.status === 'active');
  const kinds = new Set((live.length ? live : app.connections).map((c) => c.kind));
  return Object.entries(CONNECTION_KIND_TITLES)
    .filter(([kind]) => kinds.has(kind as ConnectionKind))
    .map(([, title]) => title);
}

/**
 * One application's card: its live connections, each with what it is for, and the ended ones
 * apart; then what it changed through any of them (`connection_ids`), and the undo form.
 */
function applicationCard(app: Application, verified: boolean, changes: readonly ChangeEntry[], defaultSince: string) {
  const connections = app.connections.map((c) => ({
    ...c,
    kindTitle: CONNECTION_KIND_TITLES[c.kind],
    scopeTitles: c.scopes.map(scopeTitle),
  }));
  return {
    ...app,
    verified,
    kinds: kindsOf(app),
    live: connections.filter((c) => c.status === 'active'),
    ended: connections.filter((c) => c.status !== 'active'),
    revokePath: applicationPath(app.site_id, app.client_id, '/revoke'),
    changes: changes.map((c) => changeLine(app.site_id, c)),
    undoPath: applicationPath(app.site_id, app.client_id, '/undo'),
    defaultSince,
  };
}

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
      const [applications, clients] = await Promise.all([listApplications(db, siteId), listClients(db)]);
      const sourceOf = new Map(clients.map((client) => [client.client_id, client.source]));
      const changes = await Promise.all(applications.map((app) => applicationChanges(db, app, RECENT_CHANGES)));
      const since = defaultUndoSince();
      return ctx.page(200, 'console-connections', 'sites', {
        site,
        tab: 'connections',
        applications: applications.map((app, i) => applicationCard(app, isVerifiedClient(sourceOf.get(app.client_id)), changes[i]!, since)),
      });
    }),
  );

  scope.get(
    `${CONSOLE_PATH}/sites/:siteId/applications/:clientId/revoke`,
    { schema: { hide: true, params: ApplicationParams } },
    consoleHandler<ApplicationRoute>(deps, 'GET', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      const site = await requireUserSite(db, ctx.user.id, siteId);
      // Unknown here (or only another website's) is the 404 the POST gives; one whose connections all ended is this website's, so say so.
      const app = await siteApplication(db, ctx.user.id, siteId, ctx.params.clientId);
      if (app.status !== 'active') return ctx.seeOther(sitePath(siteId), { error: 'That application is no longer connected.' });
      const name = isolated(app.client_name);
      return ctx.page(200, 'console-confirm', 'sites', {
        heading: `Revoke ${name}?`,
        message: `${name} loses access to ${site.name} at once: every connection it has to this website (${kindsOf(app).join(', ')}) ends, and its next request is refused. Your other websites' connections are not affected. To connect it again, it has to ask you again.`,
        action: applicationPath(siteId, app.client_id, '/revoke'),
        confirm: 'Revoke access',
        cancel: sitePath(siteId),
      });
    }),
  );

  scope.post(
    `${CONSOLE_PATH}/sites/:siteId/applications/:clientId/revoke`,
    { schema: { hide: true, params: ApplicationParams } },
    consoleHandler<ApplicationRoute>(deps, 'POST', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      const app = await revokeSiteApplication(db, ctx.user.id, siteId, ctx.params.clientId);
      return ctx.seeOther(sitePath(siteId), {
        notice: `${isolated(app.client_name)} is revoked: its connections to this website ended, and their tokens no longer work.`,
      });
    }),
  );

  const credentialsPage = async (ctx: ConsoleContext<SiteRoute>, status: number, data: Record<string, unknown> = {}) => {
    const siteId = idOf(ctx.params.siteId);
    const site = await requireUserSite(db, ctx.user.id, siteId);
    return ctx.page(status, 'console-credentials', 'sites', {
      site,
      tab: 'credentials',
      credentials: (await siteCredentials(db, ctx.user.id, siteId)).map((c) => ({
        ...c,
        scopeTitles: c.scopes === null ? null : c.scopes.split(' ').map(scopeTitle),
      })),
      pages: pageChoices(await pageTree(db, siteId)),
      label: '',
      defaultPage: '',
      scopes: [],
      scopeChoices: GRANTING_SCOPES.map((name) => ({ name, title: scopeTitle(name) })),
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
      // None ticked: every permission of the website, as a credential always had.
      const scopes = formValues(ctx.form, 'scope');
      const created = await changeOrFormAgain(
        (error) => credentialsPage(ctx, 400, { label, defaultPage, scopes, error }),
        () => createCredential(db, siteId, label, defaultPage === '' ? null : pageIdOf(defaultPage), scopes),
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
