/**
 * The outbox the change log is handed at wiring (app.ts, the `cms` command): for each logged
 * change, a delivery row for every active hook that wants its event, inserted in the change's own
 * transaction, so that a committed change is always delivered and a rolled-back one never is.
 * Sending happens after the commit (webhook.worker.ts).
 */
import { ChangeLog, type Outbox } from '../content/history/change-log.js';
import { eventOf, hooksFor, payloadOf } from './webhook.events.js';
import { enqueueDeliveries } from './webhook.repository.js';

export const webhookOutbox: Outbox = {
  async recipients(db, siteId, type, op) {
    const event = eventOf(type, op);
    const hooks = await hooksFor(db, siteId, event);
    return (logged) => enqueueDeliveries(db, siteId, hooks, event, payloadOf(event, logged));
  },
};

/**
 * The change log with the webhook outbox: every change a write logs queues its deliveries in the
 * write's transaction. What the app, the server's start-up and the `cms` command hand their writes.
 */
export function changeLogWithWebhooks(): ChangeLog {
  return new ChangeLog(webhookOutbox);
}
