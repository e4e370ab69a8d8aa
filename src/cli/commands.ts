import type { Kysely } from 'kysely';
import { listCredentials, listSites } from '../accounts/account.repository.js';
import {
  addSiteToUser,
  createCredential,
  createSite,
  createUser,
  listUsers,
  removeSiteFromUser,
  requireUser,
  revokeCredential,
  type SiteRole,
} from '../accounts/account.service.js';
import { migrateToLatest } from '../db/migrate.js';
import { rebuildStoredRecords } from '../db/migrations/0008_stored_records.js';
import {
  type Command,
  type CommandContext,
  listedSiteOption,
  optionalIdOption,
  optionalOption,
  repeatedOption,
  requiredOption,
  siteIdOption,
  UsageError,
} from './command.js';
import { historyCommands } from './history.commands.js';
import { imageCommands } from './images.commands.js';
import { connectionService, oauthCommands } from './oauth.commands.js';
import { table } from './output.js';
import { webhookCommands } from './webhook.commands.js';

const serve: Command = {
  name: 'serve',
  summary: 'Start the HTTP service (the same as npm start, without the build)',
  async run(ctx) {
    // Loaded here: the HTTP stack takes most of the start-up time the other commands don't need.
    const { runServer } = await import('../server.js');
    await runServer(process.env, { json: ctx.json });
    return undefined;
  },
};

const migrate: Command = {
  name: 'migrate',
  summary: 'Apply pending database migrations',
  async run(ctx) {
    const applied = await migrateToLatest(await ctx.db({ migrate: false }));
    return { json: { applied }, text: applied.length ? `Applied: ${applied.join(', ')}` : 'The database is up to date.' };
  },
};

const recordsRebuild: Command = {
  name: 'records rebuild',
  summary: "Rebuild every page's and blog's stored JSON and ETag from its columns (after a rolling upgrade)",
  async run(ctx) {
    const rewritten = await rebuildStoredRecords((await ctx.db()).kysely as Kysely<unknown>);
    return { json: { rewritten }, text: rewritten ? `Rewrote ${rewritten} stored record(s).` : 'Every stored record was current.' };
  },
};

const doctor: Command = {
  name: 'doctor',
  summary: 'Find page trees with a cycle of parents (left by concurrent moves before they were locked) and break each at its latest move',
  async run(ctx) {
    const [{ repairPageCycles }, { cliActor }] = await Promise.all([
      import('../content/pages/page.cycles.js'),
      import('../content/history/change-log.js'),
    ]);
    const repairs = await repairPageCycles((await ctx.db()).kysely, await ctx.changeLog(), cliActor('doctor'));
    const lines = repairs.map(
      (r) =>
        `Site ${r.siteId}: page ${r.page} moved from under page ${r.parentWas} to ${r.parentNow ? `under page ${r.parentNow}` : 'the top level'}, breaking the cycle ${r.cycle.join(' → ')}`,
    );
    return { json: { repairs }, text: lines.length ? lines.join('\n') : 'No page tree has a cycle.' };
  },
};

const siteCreate: Command = {
  name: 'site create',
  summary: 'Create a website; prints its id',
  usage: '--name NAME',
  options: { name: { type: 'string' } },
  async run(ctx) {
    const site = await createSite((await ctx.db()).kysely, requiredOption(ctx, 'name'));
    // Only the id, so a script can say SITE=$(cms site create --name …).
    return { json: site, text: String(site.id) };
  },
};

const siteList: Command = {
  name: 'site list',
  summary: 'List the websites',
  async run(ctx) {
    const sites = (await listSites((await ctx.db()).kysely)).map((s) => ({ id: s.id, name: s.name, createdAt: s.created_at }));
    return {
      json: { sites },
      text: table(
        ['ID', 'NAME', 'CREATED (UTC)'],
        sites.map((s) => [String(s.id), s.name, s.createdAt]),
      ),
    };
  },
};

const userCreate: Command = {
  name: 'user create',
  summary: 'Create a user who can log in and act for a website',
  usage: '--email EMAIL --password PASSWORD --site ID [--role owner|admin]',
  options: { email: { type: 'string' }, password: { type: 'string' }, site: { type: 'string' }, role: { type: 'string' } },
  async run(ctx) {
    const role = roleOption(ctx);
    const siteId = siteIdOption(ctx);
    const email = requiredOption(ctx, 'email');
    const password = requiredOption(ctx, 'password');
    const user = await createUser((await ctx.db()).kysely, { email, password, siteId, role });
    return { json: { ...user, siteId, role }, text: `Created user ${user.id} (${user.email}), ${role} of website ${siteId}.` };
  },
};

function roleOption(ctx: CommandContext): SiteRole {
  const role = optionalOption(ctx, 'role') ?? 'owner';
  if (role !== 'owner' && role !== 'admin') throw new UsageError(`--role must be owner or admin, got "${role}"`);
  return role;
}

const userAddSite: Command = {
  name: 'user add-site',
  summary: 'Give an existing user another website (or another role on one)',
  usage: '--email EMAIL --site ID [--role owner|admin]',
  options: { email: { type: 'string' }, site: { type: 'string' }, role: { type: 'string' } },
  async run(ctx) {
    const role = roleOption(ctx);
    const siteId = siteIdOption(ctx);
    const added = await addSiteToUser((await ctx.db()).kysely, requiredOption(ctx, 'email'), siteId, role);
    return { json: added, text: `${added.email} is now ${role} of website ${siteId} (${added.siteName}).` };
  },
};

const userRemoveSite: Command = {
  name: 'user remove-site',
  summary: 'Take a website away from a user; the OAuth connections they approved for it end',
  usage: '--email EMAIL --site ID',
  options: { email: { type: 'string' }, site: { type: 'string' } },
  async run(ctx) {
    const siteId = siteIdOption(ctx);
    const email = requiredOption(ctx, 'email');
    const db = (await ctx.db()).kysely;
    const user = await requireUser(db, email);
    // Connections first: if this stops half-way, running it again finishes the job.
    const { revokeUserConnections } = await connectionService();
    const revokedConnections = await revokeUserConnections(db, user.id, siteId);
    const removed = await removeSiteFromUser(db, email, siteId);
    return {
      json: { ...removed, revokedConnections },
      text: `${removed.email} no longer has website ${siteId}; ${revokedConnections} OAuth connection(s) ended.`,
    };
  },
};

const userList: Command = {
  name: 'user list',
  summary: 'List the users and their websites',
  usage: '[--site ID]',
  options: { site: { type: 'string' } },
  async run(ctx) {
    const siteId = ctx.values.site === undefined ? undefined : siteIdOption(ctx);
    const users = await listUsers((await ctx.db()).kysely, siteId);
    return {
      json: { users },
      text: table(
        ['ID', 'E-MAIL', 'CREATED (UTC)', 'WEBSITES'],
        users.map((u) => [String(u.id), u.email, u.createdAt, u.sites.map((s) => `${s.id} ${s.name} (${s.role})`).join(', ') || '-']),
      ),
    };
  },
};

const apikeyCreate: Command = {
  name: 'apikey create',
  summary: 'Create an API ID and key for a website (the key is shown only here)',
  usage: '--site ID --label LABEL [--default-page PAGE_ID] [--scope SCOPE …]',
  options: {
    site: { type: 'string' },
    label: { type: 'string' },
    'default-page': { type: 'string' },
    scope: { type: 'string', multiple: true },
  },
  async run(ctx) {
    const label = optionalOption(ctx, 'label');
    if (label === undefined) throw new UsageError('--label is required');
    const defaultPage = optionalIdOption(ctx, 'default-page', 'a page id of the website') ?? null;
    // What a label and the scopes may be is the console's rule too: createCredential checks them for both.
    const scopes = repeatedOption(ctx, 'scope');
    const credential = await createCredential((await ctx.db()).kysely, siteIdOption(ctx), label, defaultPage, scopes);
    return {
      json: credential,
      text: [
        `API ID:  ${credential.apiId}`,
        `API key: ${credential.apiKey}`,
        credential.scopes ? `Limited to: ${credential.scopes.join(' ')}.` : 'Full access to the website (no --scope given).',
        ...(defaultPage === null ? [] : [`Blogs posted without a page go to page ${defaultPage}.`]),
        'The key is shown only now (only its hash is stored): keep it somewhere safe.',
      ].join('\n'),
    };
  },
};

const apikeyList: Command = {
  name: 'apikey list',
  summary: "List a website's API credentials (never their keys)",
  usage: '--site ID',
  options: { site: { type: 'string' } },
  async run(ctx) {
    const siteId = await listedSiteOption(ctx);
    const rows = await listCredentials((await ctx.db()).kysely, siteId);
    const credentials = rows.map((c) => ({
      apiId: c.api_id,
      label: c.label,
      createdAt: c.created_at,
      lastUsedAt: c.last_used_at,
      revokedAt: c.revoked_at,
      defaultPage: c.default_page,
      // null: every permission of the website.
      scopes: c.scopes === null ? null : c.scopes.split(' '),
    }));
    return {
      json: { credentials },
      text: table(
        ['API ID', 'LABEL', 'DEFAULT PAGE', 'SCOPES', 'CREATED (UTC)', 'LAST USED', 'STATE'],
        credentials.map((c) => [
          c.apiId,
          c.label,
          c.defaultPage === null ? '-' : String(c.defaultPage),
          c.scopes?.join(' ') ?? 'all',
          c.createdAt,
          c.lastUsedAt ?? '-',
          c.revokedAt ? `revoked ${c.revokedAt}` : 'active',
        ]),
      ),
    };
  },
};

const apikeyRevoke: Command = {
  name: 'apikey revoke',
  summary: 'Revoke an API credential; requests with it fail at once',
  usage: 'API_ID',
  positionals: ['API_ID'],
  async run(ctx) {
    const apiId = ctx.positionals[0]!;
    await revokeCredential((await ctx.db()).kysely, apiId);
    return { json: { apiId, revoked: true }, text: `Revoked ${apiId}.` };
  },
};

/**
 * Every command, in the order `cms help` lists them. The OAuth commands (`client …`,
 * `connection …`) live in ./oauth.commands.ts, which loads oidc-provider only when one runs.
 */
export const COMMANDS: readonly Command[] = [
  serve,
  migrate,
  recordsRebuild,
  doctor,
  siteCreate,
  siteList,
  userCreate,
  userAddSite,
  userRemoveSite,
  userList,
  apikeyCreate,
  apikeyList,
  apikeyRevoke,
  ...imageCommands,
  ...oauthCommands,
  ...historyCommands,
  ...webhookCommands,
];
