import assert from 'node:assert/strict';
import { mock, type TestContext, test } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { buildTestApp, json } from '../test/helpers.js';
import { formatTimestamp } from './db/time.js';
import { UPKEEP_EVERY_MS, Upkeep, type UpkeepTask } from './upkeep.js';
import { payloadOf } from './webhooks/webhook.events.js';
import { deliveryGuard } from './webhooks/webhook.guard.js';
import { createWebhook, rotateSecret } from './webhooks/webhook.service.js';

const MINUTE = 60_000;

/** A log that keeps what is written to it. */
function keptLog() {
  const lines: Array<{ level: 'info' | 'warn'; message: string; fields: object }> = [];
  return {
    lines,
    info: (fields: object, message: string) => lines.push({ level: 'info', message, fields }),
    warn: (fields: object, message: string) => lines.push({ level: 'warn', message, fields }),
  };
}

/** A task that counts its runs, removing `removes` things each time (throwing instead when `fails`). */
function countingTask(name: string, options: { removes?: number; fails?: boolean } = {}) {
  const task = {
    name,
    runs: 0,
    run: async () => {
      task.runs++;
      if (options.fails) throw new Error(`${name} broke`);
      return { things: options.removes ?? 0 };
    },
  };
  return task;
}

/** Mock timers (and Math.random at `random`) for one test; the upkeep's promises settle between ticks. */
function mockedClock(t: TestContext, random: number) {
  t.mock.method(Math, 'random', () => random);
  mock.timers.enable({ apis: ['setTimeout'] });
  t.after(() => mock.timers.reset());
  return async (ms: number) => {
    mock.timers.tick(ms);
    for (let i = 0; i < 5; i++) await turn();
  };
}

test('the upkeep first runs between one and five minutes after it starts, not at once, then every hour', async (t) => {
  for (const [random, first] of [
    [0, MINUTE],
    [0.999, 5 * MINUTE],
  ] as const) {
    await t.test(`Math.random() = ${random}`, async (t) => {
      const advance = mockedClock(t, random);
      const task = countingTask('counting');
      const upkeep = new Upkeep([task], keptLog());
      upkeep.start();
      t.after(() => upkeep.stop());
      await advance(first - 1000);
      assert.equal(task.runs, 0, 'not yet');
      await advance(1000);
      assert.equal(task.runs, 1, `run ${first / MINUTE} minute(s) after the start`);
      await advance(UPKEEP_EVERY_MS - 1000);
      assert.equal(task.runs, 1, 'not again within the hour');
      await advance(1000);
      assert.equal(task.runs, 2, 'again an hour later');
      await advance(UPKEEP_EVERY_MS);
      assert.equal(task.runs, 3);
    });
  }
});

test('a task that fails is logged, the tasks after it still run, and it runs again with the next upkeep; what was removed is logged', async (t) => {
  const advance = mockedClock(t, 0);
  const log = keptLog();
  const broken = countingTask('removing what breaks', { fails: true });
  const removing = countingTask('removing old things', { removes: 3 });
  const idle = countingTask('removing nothing');
  const upkeep = new Upkeep([broken, removing, idle], log);
  upkeep.start();
  t.after(() => upkeep.stop());
  await advance(MINUTE);
  assert.deepEqual([broken.runs, removing.runs, idle.runs], [1, 1, 1]);
  assert.deepEqual(
    log.lines.map((l) => [l.level, l.message]),
    [
      ['warn', 'removing what breaks failed; it runs again with the next upkeep'],
      ['info', 'removing old things'],
    ],
  );
  assert.deepEqual(log.lines[1]!.fields, { removed: { things: 3 } });
  await advance(UPKEEP_EVERY_MS);
  assert.deepEqual([broken.runs, removing.runs, idle.runs], [2, 2, 2]);
});

test('stop waits for a run under way, and no run follows it', async (t) => {
  const advance = mockedClock(t, 0);
  let finish = () => {};
  let runs = 0;
  const slow: UpkeepTask = {
    name: 'slow',
    run: () =>
      new Promise((resolve) => {
        runs++;
        finish = () => resolve({});
      }),
  };
  const upkeep = new Upkeep([slow], keptLog());
  upkeep.start();
  await advance(MINUTE);
  assert.equal(runs, 1);
  let stopped = false;
  const stopping = upkeep.stop().then(() => {
    stopped = true;
  });
  await advance(0);
  assert.equal(stopped, false, 'the run under way has not ended');
  finish();
  await stopping;
  await advance(2 * UPKEEP_EVERY_MS);
  assert.equal(runs, 1, 'no run after stop');
});

test("the app's upkeep removes old change history, expired OAuth records, old webhook deliveries and rotated secrets past their overlap", async (t) => {
  const a = await buildTestApp(t, { config: { historyDays: 30 } });
  const db = a.db.kysely;
  const longAgo = formatTimestamp(new Date(Date.now() - 40 * 86_400_000));

  const page = json(await a.app.inject({ method: 'POST', url: '/api/page', headers: a.site.headers, payload: { page_usertitle: 'Old' } }))
    .data[0].page as number;
  const edited = await a.app.inject({
    method: 'PATCH',
    url: `/api/page/${page}`,
    headers: a.site.headers,
    payload: { page_usertitle: 'Edited' },
  });
  assert.equal(edited.statusCode, 200, edited.body);
  await db.updateTable('content_changes').set({ at: longAgo }).execute();
  await db
    .insertInto('oauth_payloads')
    .values({ model: 'Session', id: 'expired-session', payload: '{}', grant_id: null, uid: 'uid', expires_at: longAgo, consumed_at: null })
    .execute();
  const hook = await createWebhook(db, deliveryGuard({ ...a.config.webhooks, allowPrivateTargets: true }), a.site.siteId, {
    url: 'http://127.0.0.1:9/hook',
    events: ['*'],
  });
  await db
    .insertInto('webhook_deliveries')
    .values({
      webhook_id: hook.id,
      site_id: a.site.siteId,
      message_id: 'msg_old',
      event: 'page.updated',
      payload: payloadOf('page.updated', { type: 'page', id: page }),
      state: 'delivered',
      due_ms: Date.now(),
      attempts: 1,
      claimed_by: null,
      created_at: longAgo,
    })
    .execute();

  const guard = deliveryGuard({ ...a.config.webhooks, allowPrivateTargets: true });
  const rotated = await createWebhook(db, guard, a.site.siteId, { url: 'http://127.0.0.1:9/rotated', events: ['*'] });
  await rotateSecret(db, a.site.siteId, rotated.id);
  await db.updateTable('webhooks').where('id', '=', rotated.id).set({ previous_secret_until: longAgo }).execute();
  const overlapping = await createWebhook(db, guard, a.site.siteId, { url: 'http://127.0.0.1:9/overlapping', events: ['*'] });
  await rotateSecret(db, a.site.siteId, overlapping.id);

  await a.app.upkeep.run();

  const revisions = json(await a.app.inject({ url: `/api/page/${page}/revisions`, headers: a.site.headers }));
  assert.deepEqual(
    revisions.data.map((r: { revision: number }) => r.revision),
    [2],
    'the history older than HISTORY_DAYS went, but for the latest revision',
  );
  assert.equal(await db.selectFrom('oauth_payloads').select('id').where('id', '=', 'expired-session').executeTakeFirst(), undefined);
  assert.equal(await db.selectFrom('webhook_deliveries').select('id').where('message_id', '=', 'msg_old').executeTakeFirst(), undefined);
  const secrets = await db
    .selectFrom('webhooks')
    .select(['id', 'previous_secret', 'previous_secret_until'])
    .where('id', 'in', [rotated.id, overlapping.id])
    .orderBy('id')
    .execute();
  assert.deepEqual(secrets[0], { id: rotated.id, previous_secret: null, previous_secret_until: null }, 'past its overlap: gone');
  assert.match(String(secrets[1]?.previous_secret), /^whsec_/, 'within its overlap: still signing');
});
