/**
 * What an attempt came to, and how it is written: the attempt recorded, the delivery settled as
 * the retry rules say (webhook.retry.ts), and the hook disabled when they say so. The worker
 * gathers outcomes as attempts end and writes a poll's worth in one transaction.
 */
import type { DbHandle } from '../db/schema.js';
import {
  type ClaimedDelivery,
  countAttempt,
  disableHook,
  insertAttempt,
  lockHook,
  markDelivered,
  noteFailure,
  settleClaim,
} from './webhook.repository.js';
import { failingTooLong, nextDeliveryState } from './webhook.retry.js';

export type Outcome =
  /** Not attempted (the process is stopping): due again at once. */
  | { kind: 'release'; delivery: ClaimedDelivery }
  /** Its hook was disabled or deleted since it was queued. */
  | { kind: 'cancel'; delivery: ClaimedDelivery }
  /** The credential its hook sends under was revoked or has ended: the hook is disabled, nothing is sent. */
  | { kind: 'revoked'; delivery: ClaimedDelivery }
  | {
      kind: 'attempt';
      delivery: ClaimedDelivery;
      statusCode: number | null;
      error: string | null;
      durationMs: number;
      at: string;
      retryAfterS: number | undefined;
    };

/** Outcomes in the order every writer of their rows locks them: by hook, then delivery. */
export function inLockOrder(outcomes: Outcome[]): Outcome[] {
  return outcomes.sort((a, b) => a.delivery.webhook_id - b.delivery.webhook_id || a.delivery.id - b.delivery.id);
}

/** Writes one outcome of a claim held by `node`, inside the caller's transaction. */
export async function recordOutcome(
  db: DbHandle,
  outcome: Outcome,
  { node, retrySchedule }: { readonly node: string; readonly retrySchedule: readonly number[] },
): Promise<void> {
  const { delivery } = outcome;
  // The hook's row before its delivery's, as an update or delete of the hook takes them (the hook,
  // then its pending deliveries): in the other order, a result written while the owner disabled
  // the hook deadlocked with it on PostgreSQL, and one of the two failed.
  await lockHook(db, delivery.webhook_id);
  if (outcome.kind === 'release') return settleClaim(db, delivery.id, node, { due_ms: Date.now() });
  if (outcome.kind === 'cancel') return settleClaim(db, delivery.id, node, { state: 'failed' });
  if (outcome.kind === 'revoked') {
    await settleClaim(db, delivery.id, node, { state: 'failed' });
    return disableHook(db, delivery.webhook_id, 'revoked');
  }
  // Counted and recorded whether or not this node's claim still stands (a late result beside the
  // attempt of the node that took over). No number: the delivery went with its hook, deleted
  // while this attempt ran, and there is nothing left to record it on.
  const attempt = await countAttempt(db, delivery.id);
  if (attempt === undefined) return;
  await insertAttempt(db, {
    delivery_id: delivery.id,
    attempt,
    status_code: outcome.statusCode,
    error: outcome.error,
    duration_ms: outcome.durationMs,
    at: outcome.at,
  });
  const next = nextDeliveryState(outcome, delivery.step, { schedule: retrySchedule, nowMs: Date.now(), random: Math.random() });
  if (next.state === 'delivered') return markDelivered(db, delivery, node);
  if (next.state === 'failed' && next.disable) {
    await settleClaim(db, delivery.id, node, { state: 'failed' });
    return disableHook(db, delivery.webhook_id, next.disable);
  }
  await settleClaim(db, delivery.id, node, next.state === 'failed' ? { state: 'failed' } : { due_ms: next.dueMs, step: next.step });
  const hook = await noteFailure(db, delivery.webhook_id, outcome.at);
  if (hook?.status === 'active' && failingTooLong(hook.failing_since, new Date())) await disableHook(db, delivery.webhook_id, 'failing');
}
