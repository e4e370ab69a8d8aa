/**
 * The statements behind a website's management of its hooks: the hooks' rows and secrets
 * (webhook.service.ts, and the upkeep's clearing of rotated secrets) and each hook's delivery log
 * (webhook.deliveries.ts). What queues and sends deliveries is in webhook.repository.ts.
 */
import type { Insertable, Selectable, Updateable } from 'kysely';
import { dialectOf } from '../db/database.js';
import type { DbHandle } from '../db/schema.js';
import { formatTimestamp } from '../db/time.js';
import type { WebhooksTable } from './webhook.table.js';

const HOOK_COLUMNS = ['id', 'url', 'events', 'description', 'status', 'disabled_reason', 'failing_since', 'created_at', 'secret'] as const;

/** A hook's row as the management functions read it (webhook.service.ts). */
export type HookRow = Pick<Selectable<WebhooksTable>, (typeof HOOK_COLUMNS)[number]>;

/** A website's hook; `lock`: on PostgreSQL, its row is held until the transaction ends. */
export function selectHook(db: DbHandle, siteId: number, id: number, lock = false): Promise<HookRow | undefined> {
  const query = db.selectFrom('webhooks').select(HOOK_COLUMNS).where('site_id', '=', siteId).where('id', '=', id);
  return (lock && dialectOf(db) === 'postgres' ? query.forNoKeyUpdate() : query).executeTakeFirst();
}

export function selectHooks(db: DbHandle, siteId: number): Promise<HookRow[]> {
  return db.selectFrom('webhooks').select(HOOK_COLUMNS).where('site_id', '=', siteId).orderBy('id').execute();
}

export async function countHooks(db: DbHandle, siteId: number): Promise<number> {
  const { count } = await db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('site_id', '=', siteId)
    .executeTakeFirstOrThrow();
  return Number(count);
}

export function insertHook(db: DbHandle, values: Insertable<WebhooksTable>): Promise<HookRow> {
  return db.insertInto('webhooks').values(values).returning(HOOK_COLUMNS).executeTakeFirstOrThrow();
}

export async function updateHook(db: DbHandle, id: number, changes: Updateable<WebhooksTable>): Promise<void> {
  await db.updateTable('webhooks').where('id', '=', id).set(changes).execute();
}

/** Resolves to whether the website had the hook. */
export async function deleteHook(db: DbHandle, siteId: number, id: number): Promise<boolean> {
  const result = await db.deleteFrom('webhooks').where('site_id', '=', siteId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Until when the hook's previous secret still signs; null when it has none. */
export async function previousSecretUntil(db: DbHandle, id: number): Promise<string | null> {
  const row = await db.selectFrom('webhooks').select('previous_secret_until').where('id', '=', id).executeTakeFirstOrThrow();
  return row.previous_secret_until;
}

/**
 * Clears the previous secrets whose overlap after a rotation has ended at `at`: they sign nothing
 * any more, and a secret kept is a secret a copy of the database gives away. Part of each node's
 * upkeep (upkeep.ts). Resolves to how many hooks it cleared.
 */
export async function forgetRotatedSecrets(db: DbHandle, at = new Date()): Promise<number> {
  const cleared = await db
    .updateTable('webhooks')
    .where('previous_secret_until', '<=', formatTimestamp(at))
    .set({ previous_secret: null, previous_secret_until: null })
    .executeTakeFirst();
  return Number(cleared.numUpdatedRows);
}

/** A hook's latest deliveries (only `only`, when given), newest first. */
export function selectDeliveries(db: DbHandle, webhookId: number, limit: number, only?: number) {
  let query = db
    .selectFrom('webhook_deliveries')
    .select(['id', 'message_id', 'event', 'state', 'created_at'])
    .where('webhook_id', '=', webhookId);
  if (only !== undefined) query = query.where('id', '=', only);
  return query.orderBy('id', 'desc').limit(limit).execute();
}

/** The attempts of the deliveries `ids`, by delivery, the first first. */
export function selectAttempts(db: DbHandle, ids: readonly number[]) {
  return db
    .selectFrom('webhook_attempts')
    .select(['delivery_id', 'attempt', 'status_code', 'error', 'duration_ms', 'at'])
    .where('delivery_id', 'in', ids)
    .orderBy('delivery_id')
    .orderBy('attempt')
    .execute();
}

/** Makes a hook's delivery that is not pending pending again, due at `dueMs` on `step`. Resolves to whether it did. */
export async function makePendingAgain(
  db: DbHandle,
  webhookId: number,
  deliveryId: number,
  { dueMs, step }: { dueMs: number; step: number },
): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .where('webhook_id', '=', webhookId)
    .where('id', '=', deliveryId)
    .where('state', '!=', 'pending')
    .set({ state: 'pending', due_ms: dueMs, step, claimed_by: null })
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deliveryExists(db: DbHandle, webhookId: number, deliveryId: number): Promise<boolean> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('webhook_id', '=', webhookId)
    .where('id', '=', deliveryId)
    .executeTakeFirst();
  return row !== undefined;
}
