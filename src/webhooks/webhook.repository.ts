/**
 * The webhook tables' statements that queue and send deliveries: the outbox (webhook.outbox.ts)
 * and the worker (webhook.worker.ts); the hooks' management and delivery log read and write
 * through hook.repository.ts. Every write of a hook and its deliveries in one transaction locks
 * the hook's row first (lockHook), the order in which an update or delete of the hook takes them.
 */
import { sql } from 'kysely';
import { dialectOf } from '../db/database.js';
import type { DbHandle } from '../db/schema.js';
import { now, timestampBefore } from '../db/time.js';
import { newMessageId } from './webhook.signing.js';
import type { DisabledReason } from './webhook.table.js';

/** A delivery as a claim hands it to the worker. */
export interface ClaimedDelivery {
  id: number;
  webhook_id: number;
  site_id: number;
  message_id: string;
  payload: string;
  step: number;
}

/** A hook as an attempt needs it; `credential_live` as credentialLive says. */
export interface HookToSend {
  id: number;
  url: string;
  status: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  credential_live: number;
}

/** The ids of a website's active hooks, with the events each wants as stored. */
export function activeHooks(db: DbHandle, siteId: number): Promise<{ id: number; events: string; read_scopes: string | null }[]> {
  return db
    .selectFrom('webhooks')
    .select(['id', 'events', 'read_scopes'])
    .where('site_id', '=', siteId)
    .where('status', '=', 'active')
    .execute();
}

/** One outbox row per hook, due at once, each with its own `webhook-id`. */
export async function enqueueDeliveries(
  db: DbHandle,
  siteId: number,
  hooks: readonly number[],
  event: string,
  payload: string,
): Promise<void> {
  if (hooks.length === 0) return;
  const createdAt = now();
  const dueMs = Date.now();
  await db
    .insertInto('webhook_deliveries')
    .values(
      hooks.map((webhookId) => ({
        webhook_id: webhookId,
        site_id: siteId,
        message_id: newMessageId(),
        event,
        payload,
        due_ms: dueMs,
        created_at: createdAt,
      })),
    )
    .execute();
}

/**
 * Up to `limit` pending deliveries due at `nowMs`, oldest first, leaving out the websites and hooks
 * named. The state as a literal, not a parameter: only then do SQLite and PostgreSQL's generic
 * plans use the partial index.
 */
export function dueDeliveries(
  db: DbHandle,
  { nowMs, limit, notSites, notHooks }: { nowMs: number; limit: number; notSites: readonly number[]; notHooks: readonly number[] },
): Promise<{ id: number; site_id: number; webhook_id: number }[]> {
  let due = db
    .selectFrom('webhook_deliveries')
    .select(['id', 'site_id', 'webhook_id'])
    .where(sql<boolean>`state = 'pending'`)
    .where('due_ms', '<=', nowMs)
    .orderBy('due_ms')
    .limit(limit);
  if (notSites.length > 0) due = due.where('site_id', 'not in', notSites);
  if (notHooks.length > 0) due = due.where('webhook_id', 'not in', notHooks);
  return due.execute();
}

/**
 * Moves the deliveries `ids` to `leaseUntilMs` under `node`'s name, each only if it is still due
 * at `nowMs`: a row another node claimed meanwhile is skipped (on PostgreSQL `for update skip
 * locked`; SQLite has one writer), so no delivery is claimed twice.
 */
export function claimDeliveries(
  db: DbHandle,
  ids: readonly number[],
  { nowMs, leaseUntilMs, node }: { nowMs: number; leaseUntilMs: number; node: string },
): Promise<ClaimedDelivery[]> {
  let still = db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('id', 'in', ids)
    .where(sql<boolean>`state = 'pending'`)
    .where('due_ms', '<=', nowMs);
  if (dialectOf(db) === 'postgres') still = still.forUpdate().skipLocked();
  return db
    .updateTable('webhook_deliveries')
    .set({ due_ms: leaseUntilMs, claimed_by: node })
    .where('id', 'in', still)
    .returning(['id', 'webhook_id', 'site_id', 'message_id', 'payload', 'step'])
    .execute();
}

/** The hooks `ids`, with whether the credential each sends under is live at `at`. */
export function hooksToSend(db: DbHandle, ids: readonly number[], at: string): Promise<HookToSend[]> {
  return db
    .selectFrom('webhooks')
    .select(['id', 'url', 'status', 'secret', 'previous_secret', 'previous_secret_until', credentialLive(at)])
    .where('id', 'in', ids)
    .execute();
}

/**
 * 1 while the credential a hook sends under is live (an API key not revoked, an OAuth connection
 * active and within its lifetime at `at`), or when it sends under none (the console's, the CLI's);
 * 0 otherwise. Read at every attempt, just before it is made, so no delivery leaves after the
 * credential ends, on any node, whichever way it ended.
 */
function credentialLive(at: string) {
  return sql<number>`case
    when webhooks.credential_kind = 'api-key' then (case when exists (select 1 from api_credentials c
      where c.api_id = webhooks.credential_id and c.revoked_at is null) then 1 else 0 end)
    when webhooks.credential_kind = 'oauth' then (case when exists (select 1 from oauth_connections c
      where c.id = webhooks.credential_id and c.status = 'active' and c.expires_at > ${at}) then 1 else 0 end)
    else 1 end`.as('credential_live');
}

/**
 * Sets a claimed delivery's state, only while `node`'s claim stands: a node whose result comes
 * after its lease ended (a long pause) must not release the claim of the node that took over,
 * which would have the delivery sent again beside that node's attempt.
 */
export async function settleClaim(
  db: DbHandle,
  id: number,
  node: string,
  next: { state: 'failed' } | { due_ms: number; step?: number },
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .where('id', '=', id)
    .where('claimed_by', '=', node)
    .set({ ...next, claimed_by: null })
    .execute();
}

/**
 * Counts an attempt on its delivery and resolves to its number, in one statement that locks the
 * row on both databases: unique however many nodes attempted the delivery. Undefined when the
 * delivery is gone (deleted with its hook while the attempt ran).
 */
export async function countAttempt(db: DbHandle, id: number): Promise<number | undefined> {
  const counted = await db
    .updateTable('webhook_deliveries')
    .where('id', '=', id)
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .returning('attempts')
    .executeTakeFirst();
  return counted?.attempts;
}

export async function insertAttempt(
  db: DbHandle,
  attempt: { delivery_id: number; attempt: number; status_code: number | null; error: string | null; duration_ms: number; at: string },
): Promise<void> {
  await db.insertInto('webhook_attempts').values(attempt).execute();
}

/**
 * Delivered, also when the delivery was given up while this attempt ran (its hook disabled, or
 * another node's attempts ran out after a takeover); never over a claim another node holds, nor
 * over a delivery already delivered. The hook's run of failures ends.
 */
export async function markDelivered(db: DbHandle, delivery: { id: number; webhook_id: number }, node: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .where('id', '=', delivery.id)
    .where((eb) => eb.or([eb('claimed_by', '=', node), eb.and([eb('claimed_by', 'is', null), eb('state', '=', 'failed')])]))
    .set({ state: 'delivered', claimed_by: null })
    .execute();
  await db
    .updateTable('webhooks')
    .where('id', '=', delivery.webhook_id)
    .where('failing_since', 'is not', null)
    .set({ failing_since: null })
    .execute();
}

/**
 * A failed attempt at `at`: the hook's run of failures begins then unless one is going on.
 * Resolves to the hook's state and when its run began, for failingTooLong.
 */
export async function noteFailure(
  db: DbHandle,
  webhookId: number,
  at: string,
): Promise<{ status: string; failing_since: string } | undefined> {
  await db.updateTable('webhooks').where('id', '=', webhookId).where('failing_since', 'is', null).set({ failing_since: at }).execute();
  const hook = await db.selectFrom('webhooks').select(['status', 'failing_since']).where('id', '=', webhookId).executeTakeFirst();
  return hook?.failing_since ? { status: hook.status, failing_since: hook.failing_since } : undefined;
}

/**
 * Locks a hook's row until the transaction ends (PostgreSQL; SQLite writes one transaction at a
 * time). Every transaction that writes a hook and its deliveries takes the hook's row first.
 */
export async function lockHook(db: DbHandle, webhookId: number): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  await db.selectFrom('webhooks').select('id').where('id', '=', webhookId).forNoKeyUpdate().execute();
}

/** Disables a hook for `reason` and gives up its pending deliveries (a retry sends one again once it is active). */
export async function disableHook(db: DbHandle, webhookId: number, reason: DisabledReason): Promise<void> {
  await db.updateTable('webhooks').where('id', '=', webhookId).set({ status: 'disabled', disabled_reason: reason }).execute();
  await failPending(db, webhookId);
}

async function failPending(db: DbHandle, webhookId: number): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .where('webhook_id', '=', webhookId)
    .where(sql<boolean>`state = 'pending'`)
    .set({ state: 'failed', claimed_by: null })
    .execute();
}

/**
 * The deliveries no longer pending that were created more than `keepDays` (HISTORY_DAYS) ago go,
 * and their attempts with them (the foreign key cascades); a pending one stays however old. Part
 * of each node's upkeep (upkeep.ts). Resolves to how many deliveries went.
 */
export async function removeOldDeliveries(db: DbHandle, keepDays: number, now = new Date()): Promise<number> {
  const removed = await db
    .deleteFrom('webhook_deliveries')
    .where(sql<boolean>`state != 'pending'`)
    .where('created_at', '<', timestampBefore(now, keepDays * 24 * 3600 * 1000))
    .executeTakeFirst();
  return Number(removed.numDeletedRows);
}
