import { randomBytes } from 'node:crypto';
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
  scopes: readonly string[];
}

/** Written on consent: one connection per authorization, never shared between websites. */
export async function createConnection(db: DbHandle, input: NewConnection): Promise<string> {
  const id = `con_${randomBytes(12).toString('base64url')}`;
  await repo.insertConnection(db, {
    id,
    grant_id: input.grantId,
    user_id: input.userId,
    client_id: input.clientId,
    site_id: input.siteId,
    scopes: input.scopes.join(' '),
    status: 'active',
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
    scopes: row.scopes.split(' ').filter(Boolean),
    status: row.status === 'active' && row.expires_at <= at ? 'expired' : row.status,
  }));
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
  const grantIds = await repo.findUserGrantIds(db, userId, siteId);
  for (const grantId of grantIds) await repo.endGrant(db, grantId, 'revoked', now());
  return grantIds.length;
}

/** Ends every live connection made with a client (the client is being deleted). */
export async function revokeClientConnections(db: DbHandle, clientId: string): Promise<number> {
  const grantIds = await repo.findClientGrantIds(db, clientId);
  for (const grantId of grantIds) await repo.endGrant(db, grantId, 'revoked', now());
  return grantIds.length;
}

/** The provider revoked a grant itself (refresh token reuse, code reuse, RFC 7009): record it. */
export async function revokeGrant(db: DbHandle, grantId: string, status: 'revoked' | 'expired' = 'revoked'): Promise<void> {
  await repo.endGrant(db, grantId, status, now());
}

/** Marks connections past their rolling lifetime as expired and drops their grants. */
export async function expireLapsedConnections(db: DbHandle): Promise<number> {
  const grantIds = await repo.findLapsedGrantIds(db, now());
  for (const grantId of grantIds) await repo.endGrant(db, grantId, 'expired', now());
  return grantIds.length;
}
