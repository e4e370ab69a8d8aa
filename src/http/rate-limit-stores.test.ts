import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { createTestDatabase, testRedis } from '../../test/helpers.js';
import { authorizeUrl, Browser, formOf, pkcePair, startOAuthApp } from '../../test/oauth.helpers.js';
import { startRedis, startRedisProcess } from '../../test/redis-server.js';
import { freePort } from '../../test/server-process.js';
import { until } from '../../test/until.js';
import { sha256 } from '../accounts/secrets.js';
import { rateLimitStores, withFallback } from './configured-rate-limits.js';
import { databaseRateLimits, purgeRateLimits } from './database-rate-limits.js';
import { memoryRateLimits } from './memory-rate-limits.js';
import type { Hit, RateLimitStore } from './rate-limit.js';
import { type RedisFailure, redisRateLimits } from './redis-rate-limits.js';
import { syncedRateLimits } from './synced-rate-limits.js';

async function countsAndResets(store: RateLimitStore) {
  assert.deepEqual((await store.hit('k1', 60)).count, 1);
  assert.deepEqual((await store.hit('k1', 60)).count, 2);
  const third = await store.hit('k1', 60);
  assert.equal(third.count, 3);
  assert.ok(third.retryAfter > 0 && third.retryAfter <= 60);
  assert.equal((await store.hit('k2', 60)).count, 1, 'keys are separate');
  await store.takeBack('k1');
  assert.equal((await store.hit('k1', 60)).count, 3, 'a hit taken back no longer counts');
  await store.takeBack('k3');
  assert.equal((await store.hit('k3', 60)).count, 1, 'taking back from nothing leaves nothing, never less');
  await store.reset('k1');
  assert.equal((await store.hit('k1', 60)).count, 1);
}

test('database counters: count, reset, and a new window after the old one ends', async (t) => {
  const db = await createTestDatabase(t);
  const store = databaseRateLimits(db.kysely);
  await countsAndResets(store);
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  t.mock.timers.tick(61_000);
  assert.equal((await store.hit('k1', 60)).count, 1, 'the window ended');
  await purgeRateLimits(db.kysely);
  const left = await db.kysely.selectFrom('rate_limits').select('key').execute();
  assert.equal(left.length, 1, 'only the live window is kept');
});

test('counters of one process: count, take back and reset', async () => {
  await countsAndResets(memoryRateLimits());
});

test('database counters are atomic under concurrency', async (t) => {
  const db = await createTestDatabase(t);
  const store = databaseRateLimits(db.kysely);
  const counts = await Promise.all(Array.from({ length: 20 }, () => store.hit('busy', 60)));
  assert.deepEqual(
    counts.map((c) => c.count).sort((x, y) => x - y),
    Array.from({ length: 20 }, (_, i) => i + 1),
  );
});

test('Redis out of reach: a command fails at once, without retries, and the outage is reported once', async (t) => {
  const failures: RedisFailure[] = [];
  const store = redisRateLimits(`redis://127.0.0.1:${await freePort()}`, 'cms:', {
    outage: (failure) => failures.push(failure),
    recovered: () => assert.fail('never connected, never recovered'),
  });
  t.after(() => store.close());
  await store.firstConnection;
  assert.equal(store.connected(), false);
  // No queue, no retries: the commands are refused for want of a connection (a queued one would
  // wait for a reconnection, then fail for its retries instead), and nothing reconnects meanwhile.
  await assert.rejects(async () => store.hit('k', 60), /enableOfflineQueue/);
  await assert.rejects(async () => store.hit('k', 60), /enableOfflineQueue/);
  assert.equal(await store.answers(), false);
  assert.equal(store.connected(), false);
  assert.equal(failures.length, 1);
  assert.deepEqual(Object.keys(failures[0]!).sort(), ['code', 'message'], 'the message and code only, never the command and its arguments');
  assert.equal(failures[0]!.code, 'ECONNREFUSED');
});

test('with a fallback: the primary while it is usable, the fallback while not and when a command fails, and a reset clears both', async () => {
  const primary = memoryRateLimits();
  const fallback = memoryRateLimits();
  let usable = true;
  let failing = false;
  const flaky: RateLimitStore = {
    ...primary,
    hit: (key, windowSeconds) => (failing ? Promise.reject(new Error('Command timed out')) : primary.hit(key, windowSeconds)),
  };
  const store = withFallback(flaky, fallback, () => usable);
  const hit = store.hit('k', 60);
  assert.ok(!(hit instanceof Promise), 'a store that answers at once still does through the fallback wrapper');
  assert.equal((hit as Hit).count, 1);
  usable = false;
  assert.equal((await store.hit('k', 60)).count, 1, 'counted again from one in the fallback');
  assert.equal((await store.hit('k', 60)).count, 2);
  await store.takeBack('k');
  assert.equal((await fallback.hit('k', 60)).count, 2, 'taken back in the fallback');
  assert.equal((await primary.hit('k', 60)).count, 2, 'the primary was not asked while unusable');
  usable = true;
  failing = true;
  assert.equal((await store.hit('k', 60)).count, 3, 'a failed command is answered by the fallback');
  failing = false;
  await store.reset('k');
  assert.equal((await primary.hit('k', 60)).count, 1);
  assert.equal((await fallback.hit('k', 60)).count, 1, 'a success does not leave counts in the fallback for the next outage');
});

test('an error reply from Redis: answered by the fallback, reported once, and the recovery reported at the next success', async (t) => {
  const url = await startRedis(t);
  if (!url) {
    t.skip('redis-server is not installed');
    return;
  }
  const db = await createTestDatabase(t);
  const events: Array<RedisFailure | 'recovered'> = [];
  const stores = rateLimitStores(
    db.kysely,
    { redisUrl: url, redisKeyPrefix: 'cms:' },
    { outage: (failure) => events.push(failure), recovered: () => events.push('recovered') },
  );
  t.after(() => stores.close());
  await stores.redis!.firstConnection;
  const inspect = new Redis(url);
  t.after(() => inspect.disconnect());
  // A value INCRBY cannot count: Redis answers every hit of this key with an error.
  await inspect.set(`cms:rl:${sha256('login')}`, 'not a number');
  assert.equal((await stores.shared.hit('login', 900)).count, 1, 'counted in the database');
  assert.equal((await stores.shared.hit('login', 900)).count, 2);
  assert.equal(events.length, 1);
  assert.match((events[0] as RedisFailure).message, /not an integer/);
  assert.equal((await stores.shared.hit('another', 900)).count, 1);
  assert.deepEqual(events.slice(1), ['recovered']);
});

test('Redis killed, then started again: counted in the database and the process meanwhile, in Redis again once it is back', async (t) => {
  const server = await startRedisProcess(t);
  if (!server) {
    t.skip('redis-server is not installed');
    return;
  }
  const db = await createTestDatabase(t);
  const events: string[] = [];
  const stores = rateLimitStores(
    db.kysely,
    { redisUrl: server.url, redisKeyPrefix: 'cms:' },
    { outage: () => events.push('outage'), recovered: () => events.push('recovered') },
  );
  t.after(() => stores.close());
  await stores.redis!.firstConnection;
  const databaseCounts = async () => (await db.kysely.selectFrom('rate_limits').select('count').execute()).map((r) => r.count);
  assert.equal((await stores.shared.hit('login', 900)).count, 1);
  assert.equal((await stores.shared.hit('login', 900)).count, 2);
  assert.equal((await stores.perRequest.hit('api', 60, 100)).count, 1);
  assert.deepEqual(await databaseCounts(), [], 'in Redis while it answers');

  await server.kill();
  assert.equal((await stores.shared.hit('login', 900)).count, 1, 'the shared count starts again, in the database');
  assert.equal((await stores.shared.hit('login', 900)).count, 2);
  assert.deepEqual(await databaseCounts(), [2]);
  const perRequest = stores.perRequest.hit('api', 60, 100);
  assert.equal((await perRequest).count, 1, 'the per-request count starts again, in this process');
  assert.equal(await stores.redis!.answers(), false);
  await until('the outage to be reported', async () => events.length > 0);
  assert.ok(!(stores.perRequest.hit('api', 60, 100) instanceof Promise), 'once the outage is known, counted here without a promise');

  await server.restart();
  await until('the reconnection', async () => events.includes('recovered'));
  assert.deepEqual(events, ['outage', 'recovered'], 'one line when it went, one when it came back');
  assert.equal(await stores.redis!.answers(), true);
  assert.equal((await stores.shared.hit('login', 900)).count, 1, 'counted in the new, empty Redis');
  assert.deepEqual(await databaseCounts(), [2], 'not in the database');
  await stores.shared.reset('login');
  assert.deepEqual(await databaseCounts(), [], 'a reset clears what the database counted during the outage');
  await stores.perRequest.hit('api, a new window', 60, 100);
  const inspect = new Redis(server.url);
  t.after(() => inspect.disconnect());
  assert.equal((await inspect.keys('cms:rl:*')).length, 1, 'the per-request count is back in Redis too');
});

test('Redis counters, and the login limit shared by two apps through Redis', async (t) => {
  const url = await startRedis(t);
  if (!url) {
    t.skip('redis-server is not installed');
    return;
  }
  const store = redisRateLimits(url);
  t.after(() => store.close());
  await store.firstConnection;
  await countsAndResets(store);

  const db = await createTestDatabase(t);
  const a = await startOAuthApp(t, { db, config: { redisUrl: url } });
  const b = await startOAuthApp(t, { db, config: { redisUrl: url } });
  const attempt = async (app: typeof a, password: string) => {
    const { challenge } = await pkcePair();
    const browser = new Browser(app.base);
    const page = await browser.follow(authorizeUrl(app.issuer, { clientId: app.clientId, codeChallenge: challenge }));
    const form = formOf(page.html);
    return (await browser.follow(form.action, { form: { csrf: form.csrf, decision: 'approve', email: a.owner.email, password } })).status;
  };
  for (let i = 0; i < 5; i++) assert.equal(await attempt(i % 2 ? a : b, 'wrong'), 400);
  assert.equal(await attempt(b, a.owner.password), 429);
  const rows = await db.kysely.selectFrom('rate_limits').selectAll().execute();
  assert.equal(rows.length, 0, 'with Redis configured, the database keeps no counters');
});

test('synchronised Redis counts: counted locally between synchronisations, synchronised on every hit near the quota', async (t) => {
  const url = await testRedis(t);
  if (!url) return;
  // The clock moves only when the test says, so a slow machine cannot add synchronisations.
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const prefix = `test:${randomUUID()}:`;
  const remotes = [redisRateLimits(url, prefix), redisRateLimits(url, prefix)];
  await Promise.all(remotes.map((remote) => remote.firstConnection));
  const [a, b] = remotes.map(syncedRateLimits) as [RateLimitStore, RateLimitStore];
  t.after(() => Promise.all([a.close(), b.close()]));
  const counts = async (store: RateLimitStore, n: number, quota: number) => {
    const seen = [];
    for (let i = 0; i < n; i++) seen.push((await store.hit('k', 60, quota)).count);
    return seen;
  };
  assert.deepEqual(await counts(a, 4, 100), [1, 2, 3, 4], 'node a: one synchronisation, then counted here');
  assert.deepEqual(await counts(b, 1, 100), [2], "node b sees a's first hit, not yet the three since");
  t.mock.timers.tick(120);
  assert.deepEqual(await counts(a, 1, 100), [6], 'after 100 ms node a adds its hits and reads the total');
  // Quota 10: a node synchronises every hit once its count is at 9 or more.
  assert.deepEqual(await counts(b, 1, 10), [7], 'node b: its last total is old, so it synchronises');
  assert.deepEqual(await counts(a, 1, 10), [7], "node a counts here: 6 + 1, b's hit unknown to it");
  assert.deepEqual(await counts(b, 3, 10), [8, 9, 10], 'b counts 8 here, then synchronises at 9 and 10');
  // a still believes 7 + 1: one hit past the quota is let through, the bound the store documents.
  assert.deepEqual(await counts(a, 1, 10), [8]);
  assert.deepEqual(await counts(a, 1, 10), [13], 'at 9 a synchronises: the true total, refused beyond 10');
});

test('synchronised Redis counts take a hit back whether or not Redis has it yet', async (t) => {
  const url = await testRedis(t);
  if (!url) return;
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const prefix = `test:${randomUUID()}:`;
  const remote = redisRateLimits(url, prefix);
  const store = syncedRateLimits(remote);
  t.after(() => store.close());
  await remote.firstConnection;
  assert.equal((await store.hit('k', 60, 100)).count, 1, 'synchronised: Redis has 1');
  assert.equal((await store.hit('k', 60, 100)).count, 2, 'counted here, not yet in Redis');
  await store.takeBack('k');
  assert.equal((await remote.hit('k', 60)).count, 2, 'Redis still had 1: the hit taken back never reached it');
  await store.takeBack('k');
  assert.equal((await remote.hit('k', 60)).count, 2, 'a synchronised hit is taken back in Redis');
});
