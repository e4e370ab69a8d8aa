import assert from 'node:assert/strict';
import os from 'node:os';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { buildTestApp, createTestDatabase, secondHandle, TEST_DATABASE_URL, type TestApp } from '../../test/helpers.js';
import { connect, startOAuthApp } from '../../test/oauth.helpers.js';
import { revokeCredential } from '../accounts/account.repository.js';
import { sha256 } from '../accounts/secrets.js';
import { loadConfig } from '../config.js';
import { ChangeSource } from '../db/change-source.js';
import type { Db } from '../db/database.js';
import { formatTimestamp } from '../db/time.js';
import type { MaybePromise } from '../maybe-async.js';
import { memoisePerTick, PrincipalCache } from './principal-cache.js';

const postgres = Boolean(TEST_DATABASE_URL);

/** The cache the app is given, counting what it answers from memory and what it reads, and the keys it is asked for. */
class ObservedCache extends PrincipalCache {
  readonly counts = { kept: 0, read: 0 };
  readonly keys = new Set<string>();

  override read<V>(
    key: string,
    read: () => MaybePromise<V | undefined>,
    until?: (value: V) => number | undefined,
  ): MaybePromise<V | undefined> {
    this.keys.add(key);
    let fromDatabase = false;
    const value = super.read(
      key,
      () => {
        fromDatabase = true;
        this.counts.read += 1;
        return read();
      },
      until,
    );
    if (!fromDatabase) this.counts.kept += 1;
    return value;
  }
}

const caches = new WeakMap<Db, ObservedCache>();

/** The observed cache of the app built on `db` (cachedApp, cachedOAuthApp). */
function cacheOf(db: Db): ObservedCache {
  const found = caches.get(db);
  assert.ok(found, 'the app was built with an observed cache');
  return found;
}

function observe(db: Db): ObservedCache {
  const cache = new ObservedCache(db.changes);
  caches.set(db, cache);
  return cache;
}

async function cachedApp(t: TestContext, db?: Db): Promise<TestApp> {
  const on = db ?? (await createTestDatabase(t));
  return buildTestApp(t, { db: on, principals: observe(on) });
}

async function cachedOAuthApp(t: TestContext) {
  const db = await createTestDatabase(t);
  return startOAuthApp(t, { db, principals: observe(db) });
}

async function status(a: TestApp, headers: Record<string, string> = a.site.headers): Promise<number> {
  return (await a.app.inject({ url: '/api/page', headers })).statusCode;
}

/** Attempts before a poll in this file gives up: only turns a hang into a failure. */
const ATTEMPTS = 1000;

/**
 * Sends the request until an answer came from the cache (on PostgreSQL the node first has to be
 * listening, which it announces to no one, so this polls): proves the cache is in use before a
 * test shows it letting go. Bounded by attempts, not by the clock, which a test may have stopped.
 */
async function untilKept(a: TestApp, headers: Record<string, string> = a.site.headers): Promise<void> {
  const counts = cacheOf(a.db).counts;
  for (let attempt = 1; ; attempt++) {
    const before = counts.kept;
    assert.equal(await status(a, headers), 200);
    if (counts.kept > before) return;
    assert.ok(attempt < ATTEMPTS, `no answer from the cache in ${ATTEMPTS} requests`);
    await sleep(20); // the interval of the poll, not a wait for the event
  }
}

test('an API key is read once and then kept; a revocation refuses the very next request', async (t) => {
  const a = await cachedApp(t);
  await untilKept(a);
  // The first request recorded the key's use, a write every node hears of (on PostgreSQL by a
  // notification that may arrive a moment later) and drops what it kept for: one read may follow.
  // Then five requests in a row are answered with no read of the credential.
  const { counts } = cacheOf(a.db);
  for (let attempt = 1, streak = 0; streak < 5; attempt++) {
    assert.ok(attempt < ATTEMPTS, `no five requests in a row without a read of the credential in ${ATTEMPTS}`);
    const read = counts.read;
    assert.equal(await status(a), 200);
    streak = counts.read === read ? streak + 1 : 0;
  }
  assert.equal(await revokeCredential(a.db.kysely, a.site.apiId, formatTimestamp(new Date())), true);
  assert.equal(await status(a), 401, 'the next request, without waiting for anything');
});

test('what is kept is keyed by the hash of the credentials as sent: no API key or token is held in the clear', async (t) => {
  const a = await cachedOAuthApp(t);
  const { tokens } = await connect(a);
  const basic = { authorization: a.site.headers.authorization! };
  const pair = { 'x-api-id': a.site.apiId, 'x-api-key': a.site.apiKey };
  const bearer = { authorization: `Bearer ${tokens.access_token}` };
  for (const headers of [basic, pair, bearer]) await untilKept(a, headers);
  const keys = [...cacheOf(a.db).keys];
  assert.deepEqual(
    keys.sort(),
    [
      `key:${sha256(`${a.site.apiId}\n${a.site.apiKey}`)}`,
      `key:${sha256(basic.authorization)}`,
      `token:${a.base}:${sha256(tokens.access_token)}`,
    ].sort(),
  );
  for (const secret of [a.site.apiKey, tokens.access_token, basic.authorization.slice('Basic '.length)]) {
    assert.ok(!keys.some((key) => key.includes(secret)), 'no secret in a key');
  }
});

test('a wrong key for a kept API ID is still refused: the key is checked on every request', async (t) => {
  const a = await cachedApp(t);
  await untilKept(a);
  const wrong = { authorization: `Basic ${Buffer.from(`${a.site.apiId}:${a.site.apiKey.slice(0, -1)}x`).toString('base64')}` };
  assert.equal(await status(a, wrong), 401);
  assert.equal(await status(a), 200);
});

test('a request that reads during an uncommitted revocation is not kept past the commit', async (t) => {
  const a = await cachedApp(t);
  await untilKept(a);
  let during: Promise<number> | undefined;
  await a.db.kysely.transaction().execute(async (trx) => {
    await revokeCredential(trx, a.site.apiId, formatTimestamp(new Date()));
    during = status(a);
    // PostgreSQL answers from another connection, with the committed (live) credential; SQLite's
    // one connection makes the request wait for the commit.
    if (postgres) assert.equal(await during, 200, 'not revoked until the commit');
  });
  if (!postgres) assert.equal(await during, 401);
  assert.equal(await status(a), 401, 'the request after the commit');
});

test("another node's (or CLI process's) revocation drops what this node kept", async (t) => {
  const { first, second } = await secondHandle(t);
  const a = await cachedApp(t, first);
  await untilKept(a);
  const heard = first.changes.generation;
  assert.equal(await revokeCredential(second.kysely, a.site.apiId, formatTimestamp(new Date())), true);
  if (!postgres) {
    // SQLite: pragma data_version, asked in each tick of the event loop that uses the cache. A
    // request from another process comes in a later tick than the commit; inject does not, so the
    // test waits for the next tick as a socket would.
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(await status(a), 401, 'the next request');
    return;
  }
  // PostgreSQL: the node hears the trigger's notification (its ChangeSource counts a change); the
  // next request is refused.
  for (let attempt = 1; first.changes.generation === heard; attempt++) {
    assert.ok(attempt < ATTEMPTS, `no notification of the revocation in ${ATTEMPTS} polls`);
    await sleep(5); // the interval of the poll on the count, not a wait for the event
  }
  assert.equal(await status(a), 401, 'the next request');
});

test('a Bearer token is kept, still refused once it expires, and refused at once when revoked', async (t) => {
  const a = await cachedOAuthApp(t);
  const { tokens } = await connect(a);
  const headers = { authorization: `Bearer ${tokens.access_token}` };
  await untilKept(a, headers);
  const { read } = cacheOf(a.db).counts;
  assert.equal(await status(a, headers), 200);
  assert.equal(cacheOf(a.db).counts.read, read, 'answered from the cache');

  // A token that expires within the time a value is kept: its kept expiry is checked on each use.
  // The clock stands still until ticked past the expiry, which is well short of that time.
  const short = (await connect(a)).tokens.access_token;
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const soon = formatTimestamp(new Date(Date.now() + 3000)); // on the mocked clock
  await a.db.kysely
    .updateTable('oauth_payloads')
    .set({ expires_at: soon })
    .where('model', '=', 'AccessToken')
    .where('id', '=', sha256(short))
    .execute();
  await untilKept(a, { authorization: `Bearer ${short}` });
  t.mock.timers.tick(4000);
  assert.equal(await status(a, { authorization: `Bearer ${short}` }), 401, 'expired while kept');

  const revoked = await a.app.inject({
    method: 'POST',
    url: '/api/auth/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ token: tokens.access_token, client_id: a.clientId }).toString(),
  });
  assert.equal(revoked.statusCode, 200);
  assert.equal(await status(a, headers), 401, 'the next request after RFC 7009 revocation');
});

test('PostgreSQL: while the node is not listening nothing is kept or used, and it listens again', { skip: !postgres }, async (t) => {
  const { first, second } = await secondHandle(t);
  const a = await cachedApp(t, first);
  await untilKept(a);
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  t.after(() => admin.end());
  const terminated = await admin.query(
    'select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and pid <> pg_backend_pid()',
    [`cms-changes ${process.pid}`],
  );
  assert.ok(terminated.rowCount! >= 1, 'the listening connection was found');
  // Until the node sees its connection gone, a change could go unheard; once it does, it reads.
  const counts = cacheOf(first).counts;
  for (let attempt = 1; ; attempt++) {
    const before = counts.read;
    assert.equal(await status(a), 200);
    if (counts.read > before) break;
    assert.ok(attempt < ATTEMPTS, `the loss not seen in ${ATTEMPTS} requests`);
    await sleep(5); // the interval of the poll, not a wait for the event
  }
  // A change now is notified to nobody here; the next request reads it all the same.
  assert.equal(await revokeCredential(second.kysely, a.site.apiId, formatTimestamp(new Date())), true);
  assert.equal(await status(a), 401);
  // It listens again (after a second) and keeps again.
  const site = await a.addSite('After the loss');
  await untilKept(a, site.headers);
});

test("KEEP_CREDENTIALS=false: nothing is kept, and another node's revocation refuses the very next request", async (t) => {
  assert.equal(loadConfig({ DATA_DIR: os.tmpdir() }).keepCredentials, true, 'on by default');
  const config = loadConfig({ DATA_DIR: os.tmpdir(), KEEP_CREDENTIALS: 'false' });
  assert.equal(config.keepCredentials, false);
  const { first, second } = await secondHandle(t);
  const a = await buildTestApp(t, { db: first, config: { keepCredentials: config.keepCredentials } });
  assert.equal(await status(a), 200);
  assert.equal(await status(a), 200);
  assert.equal(await revokeCredential(second.kysely, a.site.apiId, formatTimestamp(new Date())), true);
  assert.equal(await status(a), 401, 'no notification or tick of the event loop to wait for');
});

test('a read that overlapped a change is not kept: the value it read may be from before the change', async () => {
  const changes = new ChangeSource(() => ({ fresh: () => true, close: async () => {} }));
  const cache = new PrincipalCache(changes);
  let answer!: (value: string) => void;
  const pending = cache.read('credentials', () => new Promise<string>((resolve) => (answer = resolve)));
  // A revocation commits while the read is on its way back with the row as it was.
  changes.changed();
  answer('as read before the change');
  assert.equal(await pending, 'as read before the change', 'the request that read it gets its answer');
  let reads = 0;
  const next = await cache.read('credentials', () => {
    reads += 1;
    return 'as it is now';
  });
  assert.deepEqual([next, reads], ['as it is now', 1], 'the next request reads again');
  // Without a change in between, a read is kept and answers the one after it.
  assert.equal(
    cache.read('credentials', () => 'not read'),
    'as it is now',
  );
});

const nextTick = () => new Promise((resolve) => setImmediate(resolve));

test('memoisePerTick computes a key once a tick, forgets everything when the tick ends, and past its limit computes every time', async () => {
  const computed: string[] = [];
  const hashed = memoisePerTick((key) => {
    computed.push(key);
    return `h(${key})`;
  }, 2);

  assert.equal(hashed('a'), 'h(a)');
  assert.equal(hashed('a'), 'h(a)');
  assert.equal(hashed('b'), 'h(b)');
  assert.deepEqual(computed, ['a', 'b'], 'the same tick asks once per key');

  assert.equal(hashed('c'), 'h(c)');
  assert.equal(hashed('c'), 'h(c)');
  assert.deepEqual(computed, ['a', 'b', 'c', 'c'], 'past the limit nothing more is remembered');

  await nextTick();
  assert.equal(hashed('a'), 'h(a)');
  assert.deepEqual(computed, ['a', 'b', 'c', 'c', 'a'], 'a new tick starts with nothing remembered');
});
