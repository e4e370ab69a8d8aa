import { type ExpressionBuilder, sql } from 'kysely';
import { sha256 } from '../../accounts/secrets.js';
import { dialectOf } from '../../db/database.js';
import { preparedLookup } from '../../db/prepared-lookup.js';
import type { Database, DbHandle } from '../../db/schema.js';
import { advisoryKey, inTransaction, lockInTransaction } from '../../db/transaction.js';
import type { MaybePromise } from '../../maybe-async.js';
import type { ConnectionStatus, OAuthConnectionsTable } from '../oauth.tables.js';

type ConnectionRow = OAuthConnectionsTable;

export async function insertConnection(db: DbHandle, row: ConnectionRow): Promise<void> {
  await db.insertInto('oauth_connections').values(row).execute();
}

function siteByGrantQuery(db: DbHandle, { grantId }: { grantId: string }) {
  return db.selectFrom('oauth_connections').select('site_id').where('grant_id', '=', grantId);
}

/** The website of a grant's connection; read for every access token issued (a prepared statement on SQLite). */
export async function readConnectionSite(db: DbHandle, grantId: string): Promise<number | undefined> {
  return (await preparedLookup(db, siteByGrantQuery, { grantId }))?.site_id;
}

export async function findConnection(db: DbHandle, id: string) {
  return db.selectFrom('oauth_connections').selectAll().where('id', '=', id).executeTakeFirst();
}

function liveAccessQuery(db: DbHandle, { hashedToken, now }: { hashedToken: string; now: string }) {
  const token = (eb: ExpressionBuilder<Database, 'oauth_connections'>) =>
    eb.selectFrom('oauth_payloads').where('oauth_payloads.model', '=', 'AccessToken').where('oauth_payloads.id', '=', hashedToken);
  // Subqueries, not a join: SQLite prepares a join with bound parameters again on every run, most
  // of such a read's time (bench/README.md); the token's row is looked up twice by its key instead.
  return db
    .selectFrom('oauth_connections')
    .select([
      'oauth_connections.id',
      'oauth_connections.grant_id',
      'oauth_connections.site_id',
      'oauth_connections.last_used_at',
      'oauth_connections.expires_at',
    ])
    .select((eb) => token(eb).select('oauth_payloads.payload').as('payload'))
    .select((eb) => token(eb).select('oauth_payloads.expires_at').as('token_expires_at'))
    .where('oauth_connections.grant_id', '=', (eb) =>
      token(eb)
        .select('oauth_payloads.grant_id')
        .where((inner) => inner.or([inner('oauth_payloads.expires_at', 'is', null), inner('oauth_payloads.expires_at', '>', now)])),
    )
    .where('oauth_connections.status', '=', 'active')
    .where('oauth_connections.expires_at', '>', now);
}

/** A live access token's stored payload (JSON, as the adapter wrote it), its expiry, and the connection it belongs to (with its expiry). */
export type LiveAccess = Awaited<ReturnType<ReturnType<typeof liveAccessQuery>['executeTakeFirstOrThrow']>>;

/**
 * An access token, by the SHA-256 of its value, while it has not expired and its connection is
 * active and within its lifetime: one indexed read on every Bearer request (a prepared statement on
 * SQLite, Kysely elsewhere). Active means the grant exists: every way a grant ends (endGrant:
 * revocation, replay detection, RFC 7009, lapse) deletes it and its tokens and marks the connection
 * in one transaction.
 */
export function readLiveAccess(db: DbHandle, hashedToken: string, now: string): MaybePromise<LiveAccess | undefined> {
  return preparedLookup(db, liveAccessQuery, { hashedToken, now });
}

export async function touchConnection(db: DbHandle, grantId: string, set: { last_used_at: string; expires_at?: string }) {
  await db.updateTable('oauth_connections').set(set).where('grant_id', '=', grantId).execute();
}

/**
 * The grant's first token was issued (its code was exchanged): the pending connection becomes
 * active. Only a pending one: a connection that ended meanwhile stays ended.
 */
export async function activateConnection(db: DbHandle, grantId: string): Promise<void> {
  await db
    .updateTable('oauth_connections')
    .set({ status: 'active' })
    .where('grant_id', '=', grantId)
    .where('status', '=', 'pending')
    .execute();
}

/** Statuses whose grant still exists: an active connection, or one waiting for its code's exchange. */
const LIVE: readonly ConnectionStatus[] = ['pending', 'active'];

export async function listConnectionRows(db: DbHandle, siteId: number) {
  return db
    .selectFrom('oauth_connections')
    .innerJoin('oauth_clients', 'oauth_clients.client_id', 'oauth_connections.client_id')
    .innerJoin('users', 'users.id', 'oauth_connections.user_id')
    .select([
      'oauth_connections.id',
      'oauth_connections.client_id',
      'oauth_clients.name as client_name',
      'oauth_connections.site_id',
      'oauth_connections.resource',
      'users.email as user_email',
      'oauth_connections.scopes',
      'oauth_connections.status',
      'oauth_connections.created_at',
      'oauth_connections.last_used_at',
      'oauth_connections.expires_at',
      'oauth_connections.revoked_at',
    ])
    .where('oauth_connections.site_id', '=', siteId)
    .orderBy('oauth_connections.created_at', 'desc')
    .orderBy('oauth_connections.id')
    .execute();
}

/** Active connections whose rolling refresh lifetime has run out. */
export async function findLapsedGrantIds(db: DbHandle, now: string): Promise<string[]> {
  const rows = await db
    .selectFrom('oauth_connections')
    .select('grant_id')
    .where('status', '=', 'active')
    .where('expires_at', '<=', now)
    .execute();
  return rows.map((r) => r.grant_id);
}

/** Pending connections made before `before`: authorizations whose code was never exchanged. */
export async function findUnfinishedGrantIds(db: DbHandle, before: string): Promise<string[]> {
  const rows = await db
    .selectFrom('oauth_connections')
    .select('grant_id')
    .where('status', '=', 'pending')
    .where('created_at', '<=', before)
    .execute();
  return rows.map((r) => r.grant_id);
}

/**
 * The grants of the live connections (pending or active) that match every column given: a user's
 * on one website, a client's on any website, or one application's (a client on one website), as
 * its owner sees it.
 */
export async function findLiveGrantIds(
  db: DbHandle,
  match: { readonly userId: number; readonly siteId: number } | { readonly clientId: string; readonly siteId?: number },
): Promise<string[]> {
  let query = db.selectFrom('oauth_connections').select('grant_id').where('status', 'in', LIVE);
  if ('userId' in match) query = query.where('user_id', '=', match.userId);
  if ('clientId' in match) query = query.where('client_id', '=', match.clientId);
  if (match.siteId !== undefined) query = query.where('site_id', '=', match.siteId);
  const rows = await query.execute();
  return rows.map((r) => r.grant_id);
}

/** Class id of the advisory lock (class, the grant id's key: advisoryKey) held while a grant's rows change. */
const GRANT_LOCK_CLASS = 7303;

/**
 * The grant's lock, taken first, before any row lock, by every transaction that redeems, deletes
 * or revokes a grant's rows (the adapter's consume, destroy and revokeByGrantId, and endGrant), and
 * held until it ends. Requests racing on one grant then take turns. Without it PostgreSQL
 * deadlocked and one request answered 500: of three exchanges of one code, a loser's redeeming
 * UPDATE keeps the code's row locked (READ COMMITTED locks the row it re-checks), then it revokes
 * the grant, while the other loser, which read the code as consumed, revokes it through
 * oidc-provider's revoke, model by model, and reaches that row. SQLite writes one transaction at a
 * time: nothing to take.
 */
export function lockGrant(db: DbHandle, grantId: string): Promise<void> {
  return lockInTransaction(db, GRANT_LOCK_CLASS, grantId);
}

/** lockGrant for the grant of a stored code or token, by its model and hashed id (none: no lock). */
export async function lockGrantOfPayload(db: DbHandle, model: string, hashedId: string): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  await sql`select pg_advisory_xact_lock(${GRANT_LOCK_CLASS}, ${advisoryKey(sql.ref<string>('grant_id'))}) from oauth_payloads
    where model = ${model} and id = ${hashedId} and grant_id is not null`.execute(db);
}

/**
 * Deletes every token and code of the grant and the grant itself, and records why on an active
 * connection. A pending one is deleted instead: it never connected anything, so it leaves no
 * ended connection behind. One transaction (the caller's, within a token request), so no reader
 * sees a connection marked active whose tokens are half gone.
 */
export async function endGrant(db: DbHandle, grantId: string, status: 'revoked' | 'expired', now: string) {
  await inTransaction(db, async (trx) => {
    await lockGrant(trx, grantId);
    await trx.deleteFrom('oauth_payloads').where('grant_id', '=', grantId).execute();
    await trx.deleteFrom('oauth_payloads').where('model', '=', 'Grant').where('id', '=', sha256(grantId)).execute();
    await trx.deleteFrom('oauth_connections').where('grant_id', '=', grantId).where('status', '=', 'pending').execute();
    await trx
      .updateTable('oauth_connections')
      .set({ status, ...(status === 'revoked' ? { revoked_at: now } : {}) })
      .where('grant_id', '=', grantId)
      .where('status', '=', 'active')
      .execute();
  });
}
