import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import {
  Acknowledgements,
  type Api,
  assertRevisionsListed,
  assertSawEachOnce,
  type FeedEntry,
  followFeed,
  runWriter,
} from '../../../test/feed-writers.js';
import { buildTestApp, createTestDatabase, json, type TestApp, type TestSite } from '../../../test/helpers.js';
import { createCredential, revokeCredential } from '../../accounts/account.service.js';
import type { Db } from '../../db/database.js';
import type { DbHandle } from '../../db/schema.js';
import { CursorExpiredError } from '../../errors.js';
import { readFeed, sinceOf } from './feed.service.js';
import { pruneHistory } from './retention.service.js';

/** A test app without the API rate limit: the writers and the follower send hundreds of requests a minute. */
function feedApp(t: TestContext, db?: Db) {
  return buildTestApp(t, { ...(db ? { db } : {}), config: { rateLimits: { api: 0, token: 0 } } });
}

/**
 * A feed app whose `nextPoll()` resolves at the next read of the change counters by the process's
 * FeedWatch (feed-watch.ts), which reads them only while a long-poll is held: from then on a
 * request sent before is waiting for a change.
 */
async function watchedFeedApp(t: TestContext) {
  const polled: Array<() => void> = [];
  const db = await createTestDatabase(t, {
    log: (event) => {
      if (/from "change_counters" where "site_id" in/.test(event.query.sql)) for (const resolve of polled.splice(0)) resolve();
    },
  });
  const app = await feedApp(t, db);
  return { app, nextPoll: () => new Promise<void>((resolve) => polled.push(resolve)) };
}

/** Whether `promise` has settled, after one turn of the event loop. */
async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol('pending');
  return (await Promise.race([promise.then(() => true), new Promise((resolve) => setImmediate(() => resolve(pending)))])) !== pending;
}

function apiOf(app: TestApp, site: TestSite = app.site): Api {
  return async (method, url, body) => {
    const response = await app.app.inject({ method, url, headers: site.headers, ...(body ? { payload: body } : {}) });
    return { status: response.statusCode, body: response.body ? JSON.parse(response.body) : undefined };
  };
}

async function feed(api: Api, query: string): Promise<{ data: FeedEntry[]; nextCursor: string }> {
  const answer = await api('GET', `/api/changes?${query}`);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return { data: answer.body.data, nextCursor: answer.body.meta.nextCursor };
}

async function createPage(api: Api, title: string): Promise<number> {
  const created = await api('POST', '/api/page', { page_usertitle: title });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.data[0].page;
}

test('concurrent writers: a follower of the feed sees every acknowledged write once, in seq order', async (t) => {
  const app = await feedApp(t);
  const api = apiOf(app);
  const acks = new Acknowledgements();
  const holderPage = await createPage(api, 'Holds the blogs');
  acks.add('page', holderPage, 'create');

  let done = false;
  const everything = followFeed(api, () => done);
  const blogsOnly = followFeed(api, () => done, '&type=blog');
  try {
    await Promise.all([1, 2, 3, 4].map((seed) => runWriter(api, acks, { seed, steps: 25, holderPage })));
  } finally {
    done = true;
  }
  assertSawEachOnce(await everything, acks, [app.site.apiId]);
  assertSawEachOnce(await blogsOnly, acks, [app.site.apiId], (a) => a.type === 'blog');
  assert.ok(new Set(acks.all.map((a) => a.op)).size === 4, 'creates, updates, deletes and restores were all made');
  await assertRevisionsListed(api, acks);

  // One record's changes, by type and id: its revisions, in order.
  const some = acks.all.find((a) => a.revision > 2)!;
  const { data } = await feed(api, `type=${some.type}&id=${some.id}&pageSize=999`);
  assert.deepEqual(
    data.map((e) => [e.type, e.id, e.revision]),
    acks.all.filter((a) => a.type === some.type && a.id === some.id).map((a) => [a.type, a.id, a.revision]),
  );
});

// The waits' own time limits run on a mocked clock (setTimeout and Date), ticked by the test: a
// held long-poll can then be answered only by the FeedWatch's poll (a real interval) waking it, or
// by the test moving the clock past its wait. A wait that is never woken hangs until the test's
// timeout, which only turns that into a failure.
test('a long-poll is answered when a write commits; an empty one after its wait, with its cursor', { timeout: 60_000 }, async (t) => {
  const { app, nextPoll } = await watchedFeedApp(t);
  const api = apiOf(app);
  await createPage(api, 'Before');
  const { nextCursor: caughtUp } = await feed(api, '');
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.now() });

  const waiting = feed(api, `since=${caughtUp}&wait=10`);
  await nextPoll();
  const id = await createPage(api, 'While waiting');
  const answer = await waiting;
  assert.deepEqual(
    answer.data.map((e) => [e.type, e.id, e.op, e.revision]),
    [['page', id, 'create', 1]],
  );

  const empty = feed(api, `since=${answer.nextCursor}&wait=1`);
  await nextPoll();
  await nextPoll();
  t.mock.timers.tick(999);
  assert.equal(await settledYet(empty), false, 'held, polled and not woken, until its wait is over');
  t.mock.timers.tick(1);
  assert.deepEqual(await empty, { data: [], nextCursor: answer.nextCursor }, 'nothing new: the same cursor');

  // A change the filter leaves out ends no wait, but the cursor moves past it.
  const filtered = feed(api, `since=${answer.nextCursor}&wait=1&type=blog`);
  await nextPoll();
  await createPage(api, 'Not a blog');
  for (let polls = 0; polls < 3; polls++) await nextPoll();
  assert.equal(await settledYet(filtered), false, 'still held after the polls that saw the page');
  t.mock.timers.tick(1000);
  const skipped = await filtered;
  assert.deepEqual(skipped.data, []);
  assert.notEqual(skipped.nextCursor, answer.nextCursor);
  assert.deepEqual((await feed(api, `since=${skipped.nextCursor}`)).data, [], 'the page it passed over is not shown again');
});

test('a long-poll held while its credential is revoked answers 401, not the changes made after the revocation', async (t) => {
  const { app, nextPoll } = await watchedFeedApp(t);
  const writer = apiOf(app);
  const key = await createCredential(app.db.kysely, app.site.siteId, 'feed reader');
  const follower = apiOf(app, { ...app.site, apiId: key.apiId, apiKey: key.apiKey, headers: { apiID: key.apiId, apiKey: key.apiKey } });
  const { nextCursor } = await feed(follower, '');

  const held = follower('GET', `/api/changes?since=${nextCursor}&wait=10`);
  await nextPoll();
  await revokeCredential(app.db.kysely, key.apiId);
  await createPage(writer, 'Written after the revocation');
  const answer = await held;
  assert.equal(answer.status, 401, JSON.stringify(answer.body));
  assert.equal(answer.body.data, undefined, 'no change is in the answer');
  assert.equal((await follower('GET', `/api/changes?since=${nextCursor}`)).status, 401);
});

test('GET /api/changes refuses a since that is no feed cursor, and pageSize or wait out of range', async (t) => {
  const app = await feedApp(t);
  const api = apiOf(app);
  await createPage(api, 'One');
  await createPage(api, 'Two');
  const listCursor = (await api('GET', '/api/page?pageSize=1&cursor=')).body.meta.nextCursor;
  assert.equal(typeof listCursor, 'string');
  const forged = (key: unknown[]) => Buffer.from(JSON.stringify(key)).toString('base64url');
  const cases: Array<[string, string]> = [
    [`since=${listCursor}`, 'since'],
    ['since=not-a-cursor!', 'since'],
    ['since=%20', 'since'],
    [`since=${forged(['c', 'x'])}`, 'since'],
    [`since=${forged(['c', 1.5])}`, 'since'],
    [`since=${forged(['c', 2 ** 40])}`, 'since'],
    [`since=${forged(['c'])}`, 'since'],
    [`since=${forged(['c', app.site.siteId])}`, 'since'],
    [`since=${forged(['c', app.site.siteId, -1])}`, 'since'],
    [`since=${forged(['c', app.site.siteId + 1, 1])}`, 'since'],
    [`since=${'c'.repeat(101)}`, 'since'],
    ['pageSize=0', 'pageSize'],
    ['pageSize=1000', 'pageSize'],
    ['pageSize=x', 'pageSize'],
    ['wait=31', 'wait'],
    ['wait=-1', 'wait'],
    ['type=image', 'type'],
    ['id=0', 'id'],
    ['sinse=x', 'sinse'],
  ];
  for (const [query, field] of cases) {
    const answer = await app.app.inject({ method: 'GET', url: `/api/changes?${query}`, headers: app.site.headers });
    assert.equal(answer.statusCode, 400, `${query}: ${answer.body}`);
    assert.match(String(answer.headers['content-type']), /^application\/problem\+json/);
    const problem = json(answer);
    assert.equal(problem.type, '/problems/validation-failed', query);
    assert.deepEqual(
      problem.errors.map((e: { field: string }) => e.field),
      [field],
      `${query} names ${field}`,
    );
  }
  assert.equal((await app.app.inject({ method: 'GET', url: '/api/changes' })).statusCode, 401, 'the feed needs credentials');
});

test('a cursor ahead of the feed (the database lost changes the client saw) is a 410, never an empty answer that skips what comes next', async (t) => {
  const app = await feedApp(t);
  const api = apiOf(app);
  await createPage(api, 'One');
  await createPage(api, 'Two');
  const { nextCursor: atTheEnd } = await feed(api, '');
  // What a cursor handed out before a restore from an earlier copy looks like: past the last change.
  const ahead = Buffer.from(JSON.stringify(['c', app.site.siteId, 99_999])).toString('base64url');
  const answer = await app.app.inject({ method: 'GET', url: `/api/changes?since=${ahead}`, headers: app.site.headers });
  assert.equal(answer.statusCode, 410, answer.body);
  assert.equal(json(answer).type, '/problems/cursor-expired');
  assert.match(json(answer).detail, /ahead of the change feed: it follows change 99999, and the website's last change is 2\./);
  const waited = await app.app.inject({ method: 'GET', url: `/api/changes?since=${ahead}&wait=1`, headers: app.site.headers });
  assert.equal(waited.statusCode, 410, 'a long poll is refused at once too');
  assert.deepEqual(await feed(api, `since=${atTheEnd}`), { data: [], nextCursor: atTheEnd }, 'a caught-up cursor goes on');
});

test('after pruning, an older cursor is a 410; a caught-up one, and one from a request without since, go on', async (t) => {
  const app = await feedApp(t);
  const api = apiOf(app);
  const first = await createPage(api, 'First');
  const { nextCursor: afterFirst } = await feed(api, 'pageSize=1');
  await api('PATCH', `/api/page/${first}`, { page_summary: 'changed' });
  await createPage(api, 'Second');
  const { nextCursor: caughtUp } = await feed(api, `since=${afterFirst}`);

  // Every change is older than a day, seen from two days on: all of it falls under retention.
  assert.ok((await pruneHistory(app.db.kysely, 1, new Date(Date.now() + 2 * 86_400_000))) > 0, 'the superseded revision went');
  for (const since of [afterFirst, '']) {
    const expired = await app.app.inject({ method: 'GET', url: `/api/changes?since=${since}`, headers: app.site.headers });
    assert.equal(expired.statusCode, 410, `since=${since}: ${expired.body}`);
    assert.match(String(expired.headers['content-type']), /^application\/problem\+json/);
    assert.equal(json(expired).type, '/problems/cursor-expired');
  }
  const fresh = await feed(api, '');
  assert.deepEqual(fresh.data, [], 'the feed starts after the pruned history');
  assert.deepEqual(await feed(api, `since=${caughtUp}`), { data: [], nextCursor: caughtUp }, 'a client that had seen everything goes on');

  const third = await createPage(api, 'Third');
  for (const since of [fresh.nextCursor, caughtUp]) {
    assert.deepEqual(
      (await feed(api, `since=${since}`)).data.map((e) => [e.id, e.op]),
      [[third, 'create']],
    );
  }
  const revisions = await api('GET', `/api/page/${first}/revisions`);
  assert.deepEqual(
    revisions.body.data.map((r: { revision: number }) => r.revision),
    [2],
    "the record's latest revision is kept",
  );
});

/**
 * `db`, except that the first statement that reads the change log runs `before` to its end first:
 * something another request commits between the feed's reads.
 */
function committingBeforeEntriesRead(db: DbHandle, before: () => Promise<unknown>): DbHandle {
  let pending: (() => Promise<unknown>) | undefined = before;
  const wrap = <T extends object>(builder: T): T =>
    new Proxy(builder, {
      get(target, name) {
        const value = Reflect.get(target, name);
        if (typeof value !== 'function') return value;
        if (name === 'execute') {
          return async (...args: unknown[]) => {
            const run = pending;
            pending = undefined;
            await run?.();
            return value.apply(target, args);
          };
        }
        return (...args: unknown[]) => {
          const result = value.apply(target, args);
          return typeof result === 'object' && result !== null && 'execute' in result ? wrap(result) : result;
        };
      },
    });
  return new Proxy(db, {
    get(target, name) {
      const value = Reflect.get(target, name);
      if (name === 'selectFrom') {
        return (table: string) => {
          const builder = value.call(target, table);
          return table === 'content_changes' ? wrap(builder) : builder;
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

test('retention that commits while the feed reads is a 410, never an answer with changes missing', async (t) => {
  const app = await feedApp(t);
  const api = apiOf(app);
  const gone = await createPage(api, 'Deleted long ago');
  await createPage(api, 'Kept');
  const { nextCursor: seenBoth } = await feed(api, '');
  assert.equal((await api('DELETE', `/api/page/${gone}`)).status, 204);

  // The feed reads its counter, then retention removes the page's whole history (its delete
  // included) and raises the pruned number, then the feed reads the entries after the cursor.
  const racing = committingBeforeEntriesRead(app.db.kysely, () => pruneHistory(app.db.kysely, 1, new Date(Date.now() + 2 * 86_400_000)));
  await assert.rejects(
    readFeed(racing, app.site.siteId, { since: sinceOf(seenBoth, app.site.siteId), pageSize: 200 }),
    CursorExpiredError,
    'a client that saw the page created must not be told nothing happened to it',
  );
  assert.equal((await api('GET', `/api/changes?since=${seenBoth}`)).status, 410, 'retention did run in between');
});

test("each website's feed holds its own changes only, and its revisions are its own", async (t) => {
  const app = await feedApp(t);
  const other = await app.addSite('Other');
  const mine = apiOf(app);
  const theirs = apiOf(app, other);
  const acks = { mine: new Acknowledgements(), theirs: new Acknowledgements() };
  for (let i = 0; i < 3; i++) {
    acks.mine.add('page', await createPage(mine, `Mine ${i}`), 'create');
    acks.theirs.add('page', await createPage(theirs, `Theirs ${i}`), 'create');
  }
  const theirPage = acks.theirs.all[0]!.id;
  assert.equal((await theirs('PATCH', `/api/page/${theirPage}`, { page_summary: 'theirs' })).status, 200);
  acks.theirs.add('page', theirPage, 'update');

  const seen = { mine: (await feed(mine, 'pageSize=999')).data, theirs: (await feed(theirs, 'pageSize=999')).data };
  assertSawEachOnce(seen.mine, acks.mine, [app.site.apiId]);
  assertSawEachOnce(seen.theirs, acks.theirs, [other.apiId]);
  assert.deepEqual(
    seen.theirs.map((e) => e.seq),
    [1, 2, 3, 4],
    'each website numbers its own changes',
  );

  for (const url of [`/api/page/${theirPage}/revisions`, `/api/page/${theirPage}/revisions/1`]) {
    assert.equal((await mine('GET', url)).status, 404, `${url} of another website`);
  }
  assert.equal((await mine('POST', `/api/page/${theirPage}/revisions/1/restore`)).status, 404);
  assert.deepEqual((await feed(theirs, 'pageSize=999')).data, seen.theirs, 'a refused restore left no change');
  // A cursor names its website: another website's feed refuses it rather than read it as its own numbers.
  const theirCursor = (await feed(theirs, 'pageSize=1')).nextCursor;
  const crossed = await mine('GET', `/api/changes?since=${theirCursor}`);
  assert.equal(crossed.status, 400);
  assert.deepEqual(crossed.body.errors, [
    {
      field: 'since',
      message: "is a cursor of another website's change feed: send a meta.nextCursor this website's feed gave, or leave since out to start",
    },
  ]);
});
