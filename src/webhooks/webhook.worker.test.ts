/**
 * Rules of the delivery worker that need no app: workers run against the test database directly,
 * so each test decides which node claims what and when, and no app's own worker competes.
 *
 * - Lease takeover: a delivery claimed by a node that then died is sent by another node once the
 *   lease has ended, once, with the same webhook-id; a claim whose lease has not ended is left alone.
 *   A node that was only paused past its lease and writes its result late leaves the delivery to the
 *   node that took it over.
 * - The retry schedule: a failed delivery is due again after each delay, and given up after the last.
 * - Shares: one website's hanging receivers hold at most its share of a node's slots, and another
 *   website's delivery is claimed and sent beside them; one hook's attempts are bounded the same way.
 * - A 2xx is a delivery whatever the size of its body.
 * - Retention (removeOldDeliveries, part of the upkeep): deliveries no longer pending go after
 *   keepDays (HISTORY_DAYS) with their attempts; pending ones stay however old.
 *
 * The workers here are not started: each test drives them one poll at a time (`worker.poll()`, and
 * `worker.settled()` for the attempts under way) and checks what that step did. Leases and retry
 * delays are read from Date.now(), which the tests that need time to pass move with mock timers.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { addTestSite, createTestDatabase } from '../../test/helpers.js';
import { webhookReceiver } from '../../test/webhook-receiver.js';
import { testConfig, type WebhookConfig } from '../config.js';
import type { Db } from '../db/database.js';
import { formatTimestamp } from '../db/time.js';
import type { OutboundGuard } from '../http/outbound.js';
import { payloadOf } from './webhook.events.js';
import { deliveryGuard } from './webhook.guard.js';
import { enqueueDeliveries, removeOldDeliveries } from './webhook.repository.js';
import { createWebhook } from './webhook.service.js';
import { WebhookWorker } from './webhook.worker.js';

const DAY_MS = 24 * 3600 * 1000;

const config: WebhookConfig = { ...testConfig().webhooks, allowPrivateTargets: true, pollMs: 20, retrySchedule: [0.3] };

/** A worker on the test's database; stopped at the test's end if the test has not stopped it. Its warnings go to `warnings`. */
function workerOn(t: TestContext, db: Db, warnings: string[], options: { guard?: OutboundGuard; leaseMs?: number } = {}): WebhookWorker {
  const worker = new WebhookWorker({
    db: db.kysely,
    config,
    guard: options.guard ?? deliveryGuard(config),
    warn: (error, message) => warnings.push(`${message}: ${String(error)}`),
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
  });
  t.after(() => worker.stop());
  return worker;
}

/**
 * The outbound guard of a node that claims, starts its attempt and dies before the request leaves:
 * the fetch never answers and nothing is sent. It ends only when the worker is stopped (the abort).
 */
function deadNodeGuard(): { guard: OutboundGuard; calls: () => number } {
  let calls = 0;
  const guard: OutboundGuard = {
    check: async () => {},
    fetch: (_url, init) => {
      calls++;
      return new Promise((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(new Error('aborted'))));
    },
  };
  return { guard, calls: () => calls };
}

async function deliveryRow(db: Db, id: number) {
  const row = await db.kysely
    .selectFrom('webhook_deliveries')
    .select(['id', 'message_id', 'state', 'due_ms', 'claimed_by', 'attempts'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  // bigint: a string from PostgreSQL.
  return { ...row, due_ms: Number(row.due_ms) };
}

async function attemptsOf(db: Db, id: number) {
  return db.kysely
    .selectFrom('webhook_attempts')
    .select(['attempt', 'status_code', 'error'])
    .where('delivery_id', '=', id)
    .orderBy('attempt')
    .execute();
}

async function newestDeliveryId(db: Db): Promise<number> {
  const row = await db.kysely.selectFrom('webhook_deliveries').select('id').orderBy('id', 'desc').executeTakeFirstOrThrow();
  return row.id;
}

test('a delivery claimed by a node that died is sent by another once its lease has ended, once, with the same webhook-id; a lease not ended is left alone', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const db = await createTestDatabase(t);
  const site = await addTestSite(db);
  const receiver = await webhookReceiver(t);
  const hook = await createWebhook(db.kysely, deliveryGuard(config), site.siteId, { url: receiver.url, events: ['*'] });
  assert.ok(hook.secret);
  receiver.trust(hook.secret);
  const warnings: string[] = [];

  // Node A claims the delivery through the worker's own claim, with a short lease, starts its
  // attempt and dies: its claim stands, it never writes a result.
  await enqueueDeliveries(db.kysely, site.siteId, [hook.id], 'page.created', payloadOf('page.created', { type: 'page', id: 1 }));
  const taken = await newestDeliveryId(db);
  const leaseMs = 2500;
  const dead = deadNodeGuard();
  const a = workerOn(t, db, warnings, { guard: dead.guard, leaseMs });
  const claimedAt = Date.now();
  await a.poll();
  const claimed = await deliveryRow(db, taken);
  assert.equal(claimed.claimed_by, a.node, 'node A claimed it');
  assert.equal(claimed.due_ms, claimedAt + leaseMs, 'the claim moved it a lease ahead');
  assert.equal(dead.calls(), 1, 'node A started its attempt');

  // Another delivery, claimed as a node would a moment ago: its lease ends long after this test.
  await enqueueDeliveries(db.kysely, site.siteId, [hook.id], 'page.updated', payloadOf('page.updated', { type: 'page', id: 1 }));
  const held = await newestDeliveryId(db);
  const heldUntil = Date.now() + 10 * 60 * 1000;
  await db.kysely.updateTable('webhook_deliveries').set({ due_ms: heldUntil, claimed_by: 'node-c0ffee' }).where('id', '=', held).execute();

  // Two live nodes poll just before node A's lease ends: nothing is theirs to send.
  const b = workerOn(t, db, warnings);
  const c = workerOn(t, db, warnings);
  t.mock.timers.tick(leaseMs - 1);
  await b.poll();
  await c.poll();
  assert.equal(receiver.received.length, 0, 'nothing is sent while the leases stand');
  const during = await deliveryRow(db, taken);
  assert.deepEqual([during.claimed_by, during.state, during.due_ms], [a.node, 'pending', claimed.due_ms], 'still node A’s claim');

  // The lease has ended: the next poll takes it over and sends it.
  t.mock.timers.tick(1);
  await b.poll();
  await c.poll();
  await Promise.all([b.settled(), c.settled()]);
  const [one] = await receiver.waitFor(1);
  assert.ok(one!.verified, 'verified with standardwebhooks');
  assert.equal(one!.id, claimed.message_id, 'the same webhook-id as the delivery node A claimed');
  assert.equal(one!.verified!.type, 'page.created');
  const done = await deliveryRow(db, taken);
  assert.deepEqual([done.state, done.attempts, done.claimed_by], ['delivered', 1, null]);
  assert.deepEqual(await attemptsOf(db, taken), [{ attempt: 1, status_code: 200, error: null }]);

  // Both live nodes poll again, even well past every lease but the held one: nobody sends it again.
  t.mock.timers.tick(60_000);
  await b.poll();
  await c.poll();
  await Promise.all([b.settled(), c.settled()]);
  assert.equal(receiver.received.length, 1, 'sent exactly once');

  // The claim whose lease has not ended was not taken by either node.
  const still = await deliveryRow(db, held);
  assert.deepEqual([still.state, still.claimed_by, still.due_ms, still.attempts], ['pending', 'node-c0ffee', heldUntil, 0]);
  assert.deepEqual(await attemptsOf(db, held), []);

  // Node A coming back (stopped here: its attempt is cut short and released) does not undo the delivery.
  await a.stop();
  const after = await deliveryRow(db, taken);
  assert.deepEqual([after.state, after.attempts, after.claimed_by], ['delivered', 1, null]);
  assert.deepEqual(warnings, []);
});

/**
 * The database as a node sees it that stalls (a long pause, a starved pool) between an attempt and
 * writing its result: its claims go through, its transactions (the results) wait until `resume`.
 */
function stalledWrites(db: Db): { handle: Db['kysely']; resume: () => void } {
  let resume = () => {};
  const resumed = new Promise<void>((resolve) => {
    resume = resolve;
  });
  const handle = new Proxy(db.kysely, {
    get(target, property) {
      if (property === 'transaction') {
        return () => {
          const builder = target.transaction();
          return {
            execute: async (...args: Parameters<typeof builder.execute>) => {
              await resumed;
              return builder.execute(...args);
            },
          };
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { handle, resume };
}

test('a node that writes its result after its lease ended does not undo the claim of the node that took over: no third send', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const db = await createTestDatabase(t);
  const site = await addTestSite(db);
  const receiver = await webhookReceiver(t);
  const held: Array<() => void> = [];
  // Node A's attempt fails at once; node B's is answered when the test says.
  receiver.answerWith((_request, response) => {
    if (receiver.received.length === 1) response.writeHead(500).end();
    else held.push(() => response.writeHead(200).end());
  });
  const hook = await createWebhook(db.kysely, deliveryGuard(config), site.siteId, { url: receiver.url, events: ['*'] });
  assert.ok(hook.secret);
  receiver.trust(hook.secret);
  const warnings: string[] = [];
  await enqueueDeliveries(db.kysely, site.siteId, [hook.id], 'page.created', payloadOf('page.created', { type: 'page', id: 1 }));
  const id = await newestDeliveryId(db);

  // Node A claims, is answered 500, and stalls before writing that: its lease ends meanwhile.
  const stalled = stalledWrites(db);
  const retryMs = 50;
  const a = new WebhookWorker({
    db: stalled.handle,
    config: { ...config, retrySchedule: [retryMs / 1000] },
    guard: deliveryGuard(config),
    warn: (error, message) => warnings.push(`${message}: ${String(error)}`),
    leaseMs: 400,
  });
  t.after(async () => {
    stalled.resume();
    await a.stop();
  });
  await a.poll();
  await receiver.waitFor(1);

  // Node B takes the delivery over once A's lease has ended; its attempt is under way.
  const b = workerOn(t, db, warnings);
  t.mock.timers.tick(400);
  await b.poll();
  await receiver.waitFor(2);
  assert.equal((await deliveryRow(db, id)).claimed_by, b.node);

  // A's result lands now. It must not release B's claim: with the row due again (after 50 ms) and
  // unclaimed, B's next poll would send it a third time while B's attempt is still under way.
  stalled.resume();
  await a.stop();
  t.mock.timers.tick(2 * retryMs);
  await b.poll();
  assert.equal(receiver.received.length, 2, 'not sent again while node B’s claim stands');
  assert.equal((await deliveryRow(db, id)).claimed_by, b.node, 'still node B’s claim');

  for (const answer of held.splice(0)) answer();
  await b.settled();
  await b.stop();
  const done = await deliveryRow(db, id);
  assert.deepEqual([done.state, done.claimed_by], ['delivered', null]);
  assert.equal(receiver.received.length, 2);
  assert.deepEqual(new Set(receiver.received.map((r) => r.id)), new Set([done.message_id]));
  // Both attempts happened, and both are in the delivery's record, numbered one after the other
  // whichever node's result was written first.
  const attempts = await attemptsOf(db, id);
  assert.deepEqual(attempts.map((attempt) => attempt.status_code).sort(), [200, 500]);
  assert.deepEqual(
    attempts.map((attempt) => attempt.attempt),
    [1, 2],
  );
  assert.equal(done.attempts, 2);
  assert.deepEqual(warnings, []);
});

test('a hook deleted while an attempt to it is under way: that result is dropped, and the results written with it are kept', async (t) => {
  const db = await createTestDatabase(t);
  const site = await addTestSite(db);
  const receiver = await webhookReceiver(t);
  const held: Array<() => void> = [];
  receiver.answerWith((_request, response) => {
    held.push(() => response.writeHead(200).end());
  });
  const kept = await createWebhook(db.kysely, deliveryGuard(config), site.siteId, { url: receiver.url, events: ['*'] });
  const deleted = await createWebhook(db.kysely, deliveryGuard(config), site.siteId, { url: `${receiver.url}?gone`, events: ['*'] });
  await enqueueDeliveries(
    db.kysely,
    site.siteId,
    [kept.id, deleted.id],
    'page.created',
    payloadOf('page.created', { type: 'page', id: 1 }),
  );
  const deliveryOf = async (webhookId: number) =>
    (await db.kysely.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', webhookId).executeTakeFirstOrThrow()).id;
  const keptDelivery = await deliveryOf(kept.id);
  const deletedDelivery = await deliveryOf(deleted.id);
  const warnings: string[] = [];
  const worker = workerOn(t, db, warnings);
  await worker.poll();
  await receiver.waitFor(2);

  // Deleted while both attempts wait for their answers: its deliveries go with it.
  await db.kysely.deleteFrom('webhooks').where('id', '=', deleted.id).execute();
  for (const answer of held.splice(0)) answer();
  await worker.settled();
  assert.equal((await deliveryRow(db, keptDelivery)).state, 'delivered');
  await worker.stop();

  assert.deepEqual(warnings, [], 'no result failed to be written');
  assert.deepEqual(await attemptsOf(db, keptDelivery), [{ attempt: 1, status_code: 200, error: null }]);
  assert.deepEqual(await attemptsOf(db, deletedDelivery), []);
  assert.equal(receiver.received.length, 2, 'neither was sent again');
});

test('a failed delivery is due again after each delay of the schedule (±10 %), not before, and given up after the last', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const db = await createTestDatabase(t);
  const site = await addTestSite(db);
  const receiver = await webhookReceiver(t);
  receiver.answerWith((_request, response) => response.writeHead(500).end());
  const hook = await createWebhook(db.kysely, deliveryGuard(config), site.siteId, { url: receiver.url, events: ['*'] });
  await enqueueDeliveries(db.kysely, site.siteId, [hook.id], 'page.created', payloadOf('page.created', { type: 'page', id: 1 }));
  const id = await newestDeliveryId(db);
  const schedule = [5, 300];
  const worker = new WebhookWorker({
    db: db.kysely,
    config: { ...config, retrySchedule: schedule },
    guard: deliveryGuard(config),
    warn: () => {},
  });
  t.after(() => worker.stop());

  await worker.poll();
  await worker.settled();
  for (const [step, delayS] of schedule.entries()) {
    const row = await deliveryRow(db, id);
    const waitMs = row.due_ms - Date.now(); // the mocked clock: it moves only when ticked
    assert.ok(waitMs >= delayS * 900 && waitMs <= delayS * 1100, `retry ${step + 1} due in ${waitMs} ms`);
    t.mock.timers.tick(waitMs - 1);
    await worker.poll();
    await worker.settled();
    assert.equal(receiver.received.length, step + 1, `retry ${step + 1} not sent before it is due`);
    t.mock.timers.tick(1);
    await worker.poll();
    await worker.settled();
    await receiver.waitFor(step + 2);
  }
  const failed = await deliveryRow(db, id);
  assert.deepEqual([failed.state, failed.attempts], ['failed', 3], 'given up after the last retry');
  t.mock.timers.tick(24 * 3600 * 1000);
  await worker.poll();
  await worker.settled();
  assert.equal(receiver.received.length, 3, 'nothing after the schedule ends');
});

/** Deliveries of `siteId` claimed by `node` now, by hook. */
async function claimedBy(db: Db, node: string) {
  return db.kysely
    .selectFrom('webhook_deliveries')
    .select(['id', 'site_id', 'webhook_id'])
    .where('claimed_by', '=', node)
    .where('state', '=', 'pending')
    .execute();
}

test("one website's hanging receivers hold only its share of a node's slots: another website's delivery is claimed and sent beside them, on each node", async (t) => {
  const db = await createTestDatabase(t);
  const noisy = await addTestSite(db, 'Hanging receivers');
  const quiet = await addTestSite(db, 'Another website');
  const hanging = await webhookReceiver(t);
  // Never answers: each attempt holds its slot until the worker stops.
  hanging.answerWith(() => {});
  const answering = await webhookReceiver(t);
  const hooks = [];
  for (const path of ['a', 'b', 'c']) {
    hooks.push(await createWebhook(db.kysely, deliveryGuard(config), noisy.siteId, { url: `${hanging.url}/${path}`, events: ['*'] }));
  }
  const other = await createWebhook(db.kysely, deliveryGuard(config), quiet.siteId, { url: answering.url, events: ['*'] });
  // Sixty changes on the noisy website, each to its three hooks, all due before the other website's one.
  for (let id = 1; id <= 60; id++) {
    const payload = payloadOf('page.updated', { type: 'page', id });
    await enqueueDeliveries(
      db.kysely,
      noisy.siteId,
      hooks.map((hook) => hook.id),
      'page.updated',
      payload,
    );
  }
  await enqueueDeliveries(db.kysely, quiet.siteId, [other.id], 'page.created', payloadOf('page.created', { type: 'page', id: 1 }));
  const otherDelivery = await newestDeliveryId(db);
  // Due after all of them, also when they were queued within the same millisecond.
  const { latest } = await db.kysely
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.max('due_ms').as('latest'))
    .where('site_id', '=', noisy.siteId)
    .executeTakeFirstOrThrow();
  await db.kysely
    .updateTable('webhook_deliveries')
    .set({ due_ms: Number(latest) + 1 })
    .where('id', '=', otherDelivery)
    .execute();

  const shares = { concurrency: 32, concurrencyPerHook: 16, concurrencyPerSite: 8 };
  const nodes = [0, 1].map(
    () => new WebhookWorker({ db: db.kysely, config: { ...config, ...shares }, guard: deliveryGuard(config), warn: () => {} }),
  );
  t.after(() => Promise.all(nodes.map((node) => node.stop())));
  const [one, two] = nodes as [WebhookWorker, WebhookWorker];

  // The first poll finds 32 due deliveries, all the noisy website's: it claims its share, 8.
  await one.poll();
  const first = await claimedBy(db, one.node);
  assert.equal(first.length, shares.concurrencyPerSite);
  assert.ok(first.every((row) => row.site_id === noisy.siteId));
  await hanging.waitFor(shares.concurrencyPerSite);

  // The next poll passes over the full share: the other website's delivery is claimed and sent.
  await one.poll();
  const second = await claimedBy(db, one.node);
  assert.deepEqual(
    second.filter((row) => row.site_id === quiet.siteId).map((row) => row.id),
    [otherDelivery],
  );
  assert.equal(second.filter((row) => row.site_id === noisy.siteId).length, shares.concurrencyPerSite, 'no more of the noisy website');
  const [delivered] = await answering.waitFor(1);
  assert.equal(JSON.parse(delivered!.body).type, 'page.created');

  // A second node has slots of its own: it takes its share of the noisy website, no row twice.
  await two.poll();
  await two.poll();
  const theirs = await claimedBy(db, two.node);
  assert.equal(theirs.length, shares.concurrencyPerSite);
  assert.ok(theirs.every((row) => row.site_id === noisy.siteId));
  const mine = new Set(second.map((row) => row.id));
  assert.ok(
    theirs.every((row) => !mine.has(row.id)),
    'each delivery claimed by one node',
  );
  await hanging.waitFor(2 * shares.concurrencyPerSite);
});

test('attempts to one hook are bounded by its share: a poll claims no more', async (t) => {
  const db = await createTestDatabase(t);
  const site = await addTestSite(db);
  const receiver = await webhookReceiver(t);
  receiver.answerWith(() => {});
  const hook = await createWebhook(db.kysely, deliveryGuard(config), site.siteId, { url: receiver.url, events: ['*'] });
  for (let id = 1; id <= 10; id++) {
    await enqueueDeliveries(db.kysely, site.siteId, [hook.id], 'page.created', payloadOf('page.created', { type: 'page', id }));
  }
  const worker = new WebhookWorker({
    db: db.kysely,
    config: { ...config, concurrencyPerHook: 2 },
    guard: deliveryGuard(config),
    warn: () => {},
  });
  t.after(() => worker.stop());
  await worker.poll();
  await worker.poll();
  assert.equal((await claimedBy(db, worker.node)).length, 2);
  await receiver.waitFor(2);
  assert.equal(receiver.received.length, 2);
});

test('a 2xx is a delivery whatever the size of its body: read up to 64 KiB and the rest left unread', async (t) => {
  const db = await createTestDatabase(t);
  const site = await addTestSite(db);
  const receiver = await webhookReceiver(t);
  const big = Buffer.alloc(4 * 1024 * 1024, 'x');
  receiver.answerWith((request, response) => {
    // One says its length up front, the other streams without one.
    if (request.verified?.data.id === 1) response.writeHead(200, { 'content-length': big.length }).end(big);
    else {
      response.writeHead(202);
      response.write(big);
      response.end(big);
    }
  });
  const hook = await createWebhook(db.kysely, deliveryGuard(config), site.siteId, { url: receiver.url, events: ['*'] });
  assert.ok(hook.secret);
  receiver.trust(hook.secret);
  for (const id of [1, 2]) {
    await enqueueDeliveries(db.kysely, site.siteId, [hook.id], 'page.created', payloadOf('page.created', { type: 'page', id }));
  }
  const warnings: string[] = [];
  const worker = workerOn(t, db, warnings);
  await worker.poll();
  await worker.settled();
  const rows = await db.kysely.selectFrom('webhook_deliveries').select(['id', 'state']).orderBy('id').execute();
  assert.deepEqual(
    rows.map((row) => row.state),
    ['delivered', 'delivered'],
  );
  for (const row of rows) assert.equal((await attemptsOf(db, row.id)).length, 1);
  assert.deepEqual((await attemptsOf(db, rows[1]!.id))[0], { attempt: 1, status_code: 202, error: null });
  assert.deepEqual(warnings, []);
});

/** A delivery written as the worker leaves it, `ageMs` old, with `attempts` attempts recorded. */
async function storedDelivery(
  db: Db,
  webhookId: number,
  siteId: number,
  state: 'pending' | 'delivered' | 'failed',
  ageMs: number,
  attempts: number,
) {
  const row = await db.kysely
    .insertInto('webhook_deliveries')
    .values({
      webhook_id: webhookId,
      site_id: siteId,
      message_id: `msg_${state}_${ageMs}`,
      event: 'page.updated',
      payload: payloadOf('page.updated', { type: 'page', id: 1 }),
      state,
      // A pending one has a retry to come: not due while the test runs.
      due_ms: Date.now() + DAY_MS,
      attempts,
      claimed_by: null,
      created_at: formatTimestamp(new Date(Date.now() - ageMs)),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  for (let attempt = 1; attempt <= attempts; attempt++) {
    await db.kysely
      .insertInto('webhook_attempts')
      .values({ delivery_id: row.id, attempt, status_code: 500, error: null, duration_ms: 3, at: formatTimestamp(new Date()) })
      .execute();
  }
  return row.id;
}

async function stored(db: Db) {
  return {
    deliveries: (await db.kysely.selectFrom('webhook_deliveries').select('id').orderBy('id').execute()).map((r) => r.id),
    attempts: (await db.kysely.selectFrom('webhook_attempts').select('delivery_id').orderBy('delivery_id').execute()).map(
      (r) => r.delivery_id,
    ),
  };
}

async function retentionSetUp(t: TestContext) {
  const db = await createTestDatabase(t);
  const site = await addTestSite(db);
  // Never sent to: nothing here is due.
  const hook = await createWebhook(db.kysely, deliveryGuard(config), site.siteId, { url: 'http://127.0.0.1:9/hook', events: ['*'] });
  return {
    db,
    delivery: (...args: [state: 'pending' | 'delivered' | 'failed', ageMs: number, attempts: number]) =>
      storedDelivery(db, hook.id, site.siteId, ...args),
  };
}

test('removeOldDeliveries removes the deliveries no longer pending created more than keepDays ago, with their attempts; pending and recent ones stay', async (t) => {
  const keepDays = 30;
  const { db, delivery } = await retentionSetUp(t);
  const oldDelivered = await delivery('delivered', (keepDays + 1) * DAY_MS, 2);
  const oldFailed = await delivery('failed', (keepDays + 5) * DAY_MS, 3);
  const oldPending = await delivery('pending', (keepDays + 60) * DAY_MS, 1);
  const recentDelivered = await delivery('delivered', DAY_MS, 1);
  const justInside = await delivery('failed', keepDays * DAY_MS - 3600 * 1000, 2);
  assert.equal((await stored(db)).attempts.length, 9);

  assert.equal(await removeOldDeliveries(db.kysely, keepDays), 2, 'two deliveries removed');
  const left = await stored(db);
  assert.deepEqual(left.deliveries, [oldPending, recentDelivered, justInside]);
  assert.deepEqual(
    left.attempts,
    [oldPending, recentDelivered, justInside, justInside],
    `the attempts of ${oldDelivered} and ${oldFailed} went with them`,
  );

  assert.equal(await removeOldDeliveries(db.kysely, keepDays), 0, 'a run that finds nothing older removes nothing');
  assert.deepEqual(await stored(db), left);
});
