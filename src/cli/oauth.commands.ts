import { type Command, listedSiteOption, repeatedOption, requiredOption } from './command.js';

// The services import oidc-provider, slow to load. They are loaded when one of these commands
// runs, after its arguments are checked, so that the other commands, and usage mistakes here,
// stay quick.
const clientService = () => import('../oauth/clients/client.service.js');
export const connectionService = () => import('../oauth/connections/connection.service.js');

const clientCreate: Command = {
  name: 'client create',
  summary: 'Register an OAuth client (public, PKCE); prints its client_id',
  usage: '--name NAME --redirect-uri URI [--redirect-uri URI …]',
  options: { name: { type: 'string' }, 'redirect-uri': { type: 'string', multiple: true } },
  async run(ctx) {
    const name = requiredOption(ctx, 'name');
    // None at all is the service's to refuse (exit 1), like a redirect URI it does not accept.
    const redirectUris = repeatedOption(ctx, 'redirect-uri');
    const { createClient } = await clientService();
    const client = await createClient((await ctx.db()).kysely, { name, redirectUris });
    return {
      json: client,
      text: `Created client ${client.clientId} (${client.name})\n  redirect URIs: ${client.redirectUris.join(' ')}`,
    };
  },
};

const clientList: Command = {
  name: 'client list',
  summary: 'List the OAuth clients',
  async run(ctx) {
    const { listClients } = await clientService();
    const clients = await listClients((await ctx.db()).kysely);
    return {
      json: { clients },
      text: clients.map((c) => `${c.client_id}\t${c.name}\t${c.source}\t${c.redirect_uris.join(' ')}`).join('\n') || 'No OAuth clients.',
    };
  },
};

const connectionList: Command = {
  name: 'connection list',
  summary: "List a website's OAuth connections: state, REST API or MCP, app, user, scopes",
  usage: '--site ID',
  options: { site: { type: 'string' } },
  async run(ctx) {
    const siteId = await listedSiteOption(ctx);
    const { CONNECTION_KIND_TITLES, listConnections } = await connectionService();
    const connections = await listConnections((await ctx.db()).kysely, siteId);
    // One line per connection, its id first; pending: consented to, but its code was never exchanged.
    const lines = connections.map(
      (c) =>
        `${c.id}\t${c.status}\t${CONNECTION_KIND_TITLES[c.kind]}\t${c.client_name} (${c.client_id})\t${c.user_email}\t${c.scopes.join(' ')}\tlast used ${c.last_used_at ?? 'never'}`,
    );
    return { json: { connections }, text: lines.join('\n') || `No OAuth connections for website ${siteId}.` };
  },
};

const connectionRevoke: Command = {
  name: 'connection revoke',
  summary: 'Revoke an OAuth connection: its tokens stop working at once',
  usage: 'ID',
  positionals: ['ID'],
  async run(ctx) {
    const id = ctx.positionals[0]!;
    const { revokeConnection } = await connectionService();
    await revokeConnection((await ctx.db()).kysely, id);
    return { json: { id, status: 'revoked' }, text: `Revoked connection ${id}: its access and refresh tokens no longer work.` };
  },
};

/** The OAuth engineer's commands, listed in the command table of ./commands.ts. */
export const oauthCommands: readonly Command[] = [clientCreate, clientList, connectionList, connectionRevoke];
