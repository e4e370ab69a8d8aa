import { randomBytes } from 'node:crypto';
import { MCP_PATH, type ResourceName } from '../../auth/resources.js';
import type { DbHandle } from '../../db/schema.js';
import { now, secondsFromNow } from '../../db/time.js';
import { NotFoundError } from '../../errors.js';
import type { ConnectionStatus } from '../oauth.tables.js';
import * as repo from './connection.repository.js';

/** One connection by id, or undefined: the console checks its website before revoking it. */
export { findConnection } from './connection.repository.js';

/** Refresh tokens live 90 days, and every refresh starts the 90 days again (spec §5.3). */
export const REFRESH_TTL_SECONDS = 90 * 24 * 60 * 60;

interface NewConnection {
  grantId: string;
  userId: number;
  clientId: string;
  siteId: number;
  /** The resource indicator the grant is for (RFC 8707). */
  resource: string;
  scopes: readonly string[];
}

/**
 * Written on consent: one connection per authorization, never shared between websites. It is
 * pending until its code is exchanged (activateConnection, on the grant's first token): a
 * consent whose code never reaches the token endpoint connects nothing.
 */
export async function createConnection(db: DbHandle, input: NewConnection): Promise<string> {
  const id = `con_${randomBytes(12).toString('base64url')}`;
  await repo.insertConnection(db, {
    id,
    grant_id: input.grantId,
    user_id: input.userId,
    client_id: input.clientId,
    site_id: input.siteId,
    resource: input.resource,
    scopes: input.scopes.join(' '),
    status: 'pending',
    created_at: now(),
    last_used_at: null,
    expires_at: secondsFromNow(REFRESH_TTL_SECONDS),
    revoked_at: null,
  });
  return id;
}

interface ConnectionView {
  id: string;
  client_id: string;
  client_name: string;
  site_id: number;
  resource: string | null;
  kind: ConnectionKind;
  user_email: string;
  scopes: string[];
  status: ConnectionStatus;
  created_at: string;
  last_used_at: string | null;
  expires_at: string;
  revoked_at: string | null;
}

/** A website's connections, newest first; one whose refresh lifetime ran out reads as expired. */
export async function listConnections(db: DbHandle, siteId: number): Promise<ConnectionView[]> {
  const at = now();
  const rows = await repo.listConnectionRows(db, siteId);
  return rows.map((row) => ({
    ...row,
    kind: connectionKind(row.resource),
    scopes: row.scopes.split(' ').filter(Boolean),
    status: row.status === 'active' && row.expires_at <= at ? 'expired' : row.status,
  }));
}

/** What a connection's tokens are for: the REST API, the MCP server, or not known (it ended before this was recorded). */
export type ConnectionKind = ResourceName | 'unknown';

/** How the console and the CLI name each kind. */
export const CONNECTION_KIND_TITLES: Record<ConnectionKind, string> = { api: 'REST API', mcp: 'MCP', unknown: 'resource not recorded' };

/**
 * A connection's kind, from its resource. /authorize accepts only {base_url} and {base_url}/mcp,
 * so the path's end tells them apart without PUBLIC_URL, which the CLI may run without.
 */
export function connectionKind(resource: string | null): ConnectionKind {
  if (resource === null) return 'unknown';
  return resource.endsWith(MCP_PATH) ? 'mcp' : 'api';
}

/**
 * One application (OAuth client) as a website's owner sees it: every authorization the website
 * gave it, under one entry, however many times it asked. An authorization still pending is left
 * out: nothing is connected until its code is exchanged.
 */
export interface Application {
  client_id: string;
  client_name: string;
  site_id: number;
  /** 'active' while one of its connections is; otherwise how its newest connection ended. */
  status: Exclude<ConnectionStatus, 'pending'>;
  /** Newest first. */
  connections: ConnectionView[];
  /** Every connection's id, active or ended: what the application did on the website was done through these. */
  connection_ids: string[];
  /** The latest use through any of its connections. */
  last_used_at: string | null;
}

/** A website's applications: those connected now first, then the others; newest connection first within each. */
export async function listApplications(db: DbHandle, siteId: number): Promise<Application[]> {
  const byClient = new Map<string, Application>();
  for (const connection of await listConnections(db, siteId)) {
    if (connection.status === 'pending') continue;
    const app = byClient.get(connection.client_id) ?? {
      client_id: connection.client_id,
      client_name: connection.client_name,
      site_id: siteId,
      status: connection.status,
      connections: [],
      connection_ids: [],
      last_used_at: null,
    };
    byClient.set(connection.client_id, app);
    app.connections.push(connection);
    app.connection_ids.push(connection.id);
    if (connection.status === 'active') app.status = 'active';
    if (connection.last_used_at && (!app.last_used_at || connection.last_used_at > app.last_used_at))
      app.last_used_at = connection.last_used_at;
  }
  const apps = [...byClient.values()];
  return [...apps.filter((a) => a.status === 'active'), ...apps.filter((a) => a.status !== 'active')];
}

/** One application of a website, with its connections' ids; undefined when it never connected to it. */
export async function findApplication(db: DbHandle, siteId: number, clientId: string): Promise<Application | undefined> {
  return (await listApplications(db, siteId)).find((app) => app.client_id === clientId);
}

/** Ends every live connection of an application to one website (a pending one goes); returns how many. */
export async function revokeApplication(db: DbHandle, siteId: number, clientId: string): Promise<number> {
  const grantIds = await repo.findLiveGrantIds(db, { siteId, clientId });
  for (const grantId of grantIds) await repo.endGrant(db, grantId, 'revoked', now());
  return grantIds.length;
}

/** Ends a connection: its access and refresh tokens fail on the very next request. */
export async function revokeConnection(db: DbHandle, id: string): Promise<void> {
  const connection = await repo.findConnection(db, id);
  if (!connection) throw new NotFoundError(`There is no OAuth connection ${id}.`);
  // Runs even for a connection that is no longer active: whatever might remain of it goes too.
  await repo.endGrant(db, connection.grant_id, 'revoked', now());
}

/** Ends every connection a user approved for a website (the user is losing that website); returns how many. */
export async function revokeUserConnections(db: DbHandle, userId: number, siteId: number): Promise<number> {
  const grantIds = await repo.findLiveGrantIds(db, { userId, siteId });
  for (const grantId of grantIds) await repo.endGrant(db, grantId, 'revoked', now());
  return grantIds.length;
}

/** Ends every live connection made with a client (the client is being deleted). */
export async function revokeClientConnections(db: DbHandle, clientId: string): Promise<number> {
  const grantIds = await repo.findLiveGrantIds(db, { clientId });
  for (const grantId of grantIds) await repo.endGrant(db, grantId, 'revoked', now());
  return grantIds.length;
}

/** The provider revoked a grant itself (refresh token reuse, code reuse, RFC 7009): record it. */
export async function revokeGrant(db: DbHandle, grantId: string, status: 'revoked' | 'expired' = 'revoked'): Promise<void> {
  await repo.endGrant(db, grantId, status, now());
}

/**
 * Removes pending connections made more than `seconds` ago, with their grants (endGrant deletes a
 * pending connection): authorizations whose code was never exchanged and can no longer be.
 * Returns how many.
 */
export async function dropUnfinishedConnections(db: DbHandle, seconds: number): Promise<number> {
  const grantIds = await repo.findUnfinishedGrantIds(db, secondsFromNow(-seconds));
  for (const grantId of grantIds) await repo.endGrant(db, grantId, 'expired', now());
  return grantIds.length;
}

/** Marks connections past their rolling lifetime as expired and drops their grants. */
export async function expireLapsedConnections(db: DbHandle): Promise<number> {
  const grantIds = await repo.findLapsedGrantIds(db, now());
  for (const grantId of grantIds) await repo.endGrant(db, grantId, 'expired', now());
  return grantIds.length;
}
