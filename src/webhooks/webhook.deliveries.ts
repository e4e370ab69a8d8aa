/**
 * A hook's delivery log: its latest deliveries with their attempts, a retry of one, and a test
 * delivery, as the API routes and the console show and offer them. Every function takes the
 * website's id, so a hook of another website is not found (its row is read by webhook.service.ts).
 */

import type { DbHandle } from '../db/schema.js';
import { inSnapshot, inTransaction } from '../db/transaction.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { deliveryExists, makePendingAgain, selectAttempts, selectDeliveries } from './hook.repository.js';
import { payloadOf, TEST_EVENT } from './webhook.events.js';
import { enqueueDeliveries } from './webhook.repository.js';
import { hookRow } from './webhook.service.js';

export interface AttemptView {
  attempt: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  at: string;
}

export interface DeliveryView {
  id: number;
  messageId: string;
  event: string;
  state: 'pending' | 'delivered' | 'failed';
  createdAt: string;
  /** Every attempt, the first first. */
  attempts: AttemptView[];
}

/**
 * The hook's latest deliveries, newest first, each with its attempts: read on one snapshot, so a
 * delivery's state and its attempts agree (the worker commits them together).
 */
export function listDeliveries(db: DbHandle, siteId: number, id: number, limit: number, only?: number): Promise<DeliveryView[]> {
  return inSnapshot(db, (snapshot) => readDeliveries(snapshot, siteId, id, limit, only));
}

async function readDeliveries(db: DbHandle, siteId: number, id: number, limit: number, only?: number): Promise<DeliveryView[]> {
  await hookRow(db, siteId, id);
  const deliveries = await selectDeliveries(db, id, limit, only);
  if (deliveries.length === 0) return [];
  const attempts = await selectAttempts(
    db,
    deliveries.map((d) => d.id),
  );
  return deliveries.map((d) => ({
    id: d.id,
    messageId: d.message_id,
    event: d.event,
    state: d.state,
    createdAt: d.created_at,
    attempts: attempts
      .filter((a) => a.delivery_id === d.id)
      .map((a) => ({ attempt: a.attempt, statusCode: a.status_code, error: a.error, durationMs: a.duration_ms, at: a.at })),
  }));
}

/**
 * Sends a delivery that is not pending once more, with its own `webhook-id`, at once; a failure is
 * not retried on the schedule (the owner asked for one attempt). 409 while the hook is disabled
 * or the delivery is still pending.
 */
export async function retryDelivery(
  db: DbHandle,
  siteId: number,
  id: number,
  deliveryId: number,
  retrySteps: number,
): Promise<DeliveryView> {
  // The hook's state is checked on its locked row: a disable committed meanwhile cannot be followed
  // by a delivery made pending again on the disabled hook.
  await inTransaction(db, async (trx) => {
    const hook = await hookRow(trx, siteId, id, true);
    if (hook.status !== 'active')
      throw new ConflictError(`Webhook ${id} is disabled: enable it (set its status to active) before retrying a delivery.`);
    if (!(await makePendingAgain(trx, id, deliveryId, { dueMs: Date.now(), step: retrySteps }))) {
      if (!(await deliveryExists(trx, id, deliveryId)))
        throw new NotFoundError(`Webhook ${id} has no delivery ${deliveryId}: GET /api/webhooks/${id}/deliveries lists its deliveries.`);
      throw new ConflictError(
        `Delivery ${deliveryId} of webhook ${id} is already pending: it will be sent again at its next attempt, so there is nothing to retry.`,
      );
    }
  });
  const [view] = await listDeliveries(db, siteId, id, 1, deliveryId);
  return view as DeliveryView;
}

/** Queues a `webhook.test` delivery to this hook alone, whatever events it wants: to check a receiver end to end. */
export async function sendTest(db: DbHandle, siteId: number, id: number): Promise<DeliveryView> {
  await inTransaction(db, async (trx) => {
    const hook = await hookRow(trx, siteId, id, true);
    if (hook.status !== 'active')
      throw new ConflictError(`Webhook ${id} is disabled: enable it (set its status to active) before sending a test.`);
    await enqueueDeliveries(trx, siteId, [id], TEST_EVENT, payloadOf(TEST_EVENT, { webhookId: id }));
  });
  const [latest] = await listDeliveries(db, siteId, id, 1);
  return latest as DeliveryView;
}
