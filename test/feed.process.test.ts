import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { Acknowledgements, type Api, assertRevisionsListed, assertSawEachOnce, followFeed, runWriter } from './feed-writers.js';
import { addTestSite, createEmptyPostgresDatabase, TEST_DATABASE_URL, type TestSite, tempDir } from './helpers.js';
import { HANG_LIMIT_MS, listening, type Started, start } from './server-process.js';

/** Requests to one node with the website's credentials. */
function apiOf(node: Started, site: TestSite): Api {
  return async (method, url, body) => {
    const headers: Record<string, string> = { ...site.headers };
    if (body) headers['content-type'] = 'application/json';
    const response = await fetch(`${node.base}${url}`, { method, headers, ...(body ? { body: JSON.stringify(body) } : {}) });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
}

test('two nodes on one PostgreSQL: the feed on one shows every write acknowledged by either, once, in seq order', {
  skip: TEST_DATABASE_URL ? false : 'needs PostgreSQL (set TEST_DATABASE_URL): several nodes cannot share a SQLite file',
  timeout: HANG_LIMIT_MS,
}, async (t) => {
  const database = await createEmptyPostgresDatabase(t);
  const env = {
    DATABASE_URL: database.url,
    DATA_DIR: await tempDir(t),
    COOKIE_SECRETS: randomBytes(32).toString('base64url'),
    DEMO_DATA: 'false',
    // The writers and the followers send hundreds of requests a minute with one credential.
    RATE_LIMIT_API: '0',
    LOG_LEVEL: 'warn',
  };
  const [a, b] = await Promise.all([start(t, env), start(t, env)]);
  await Promise.all([listening(a), listening(b)]);
  const handle = database.open();
  const site = await addTestSite(handle);
  /**
   * Once a node's FeedWatch has read the change counters (its query, the last of one of its
   * connections, shows in pg_stat_activity), a long-poll is held there. Only a held long-poll
   * reads them, and B holds none. Polled: PostgreSQL tells no one; the attempts only bound a hang.
   */
  const untilFeedWatched = async () => {
    for (let attempt = 1; ; attempt++) {
      const { rows } = await sql`select 1 from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
        and query like '%from "change_counters" where "site_id" in%'`.execute(handle.kysely);
      if (rows.length > 0) return;
      assert.ok(attempt < 1000, 'no long-poll held on A');
      await sleep(20); // the interval of the poll, not a wait for the event
    }
  };
  const onA = apiOf(a, site);
  const onB = apiOf(b, site);

  await t.test('writers on both nodes, followers on each', async () => {
    const acks = new Acknowledgements();
    const holder = await onA('POST', '/api/page', { page_usertitle: 'Holds the blogs' });
    assert.equal(holder.status, 201);
    const holderPage = holder.body.data[0].page as number;
    acks.add('page', holderPage, 'create');

    let done = false;
    const everything = followFeed(onA, () => done);
    const pagesOnB = followFeed(onB, () => done, '&type=page');
    try {
      // Two writers on each node, each in its own transactions: their changes commit interleaved.
      await Promise.all([onA, onB, onA, onB].map((api, i) => runWriter(api, acks, { seed: 101 + i, steps: 25, holderPage })));
    } finally {
      done = true;
    }
    assertSawEachOnce(await everything, acks, [site.apiId]);
    assertSawEachOnce(await pagesOnB, acks, [site.apiId], (w) => w.type === 'page');
    await assertRevisionsListed(onB, acks);
  });

  // How soon the answer comes is for bench/; when an empty wait ends is tested on a mocked clock in
  // src/content/history/feed.test.ts.
  await t.test('a long-poll held on A is answered with a write committed on B', async () => {
    const caughtUp = (await onA('GET', '/api/changes')).body.meta.nextCursor as string;
    const waiting = onA('GET', `/api/changes?since=${caughtUp}&wait=10`);
    await untilFeedWatched();
    const created = await onB('POST', '/api/page', { page_usertitle: 'Written on B' });
    assert.equal(created.status, 201);
    const answer = await waiting;
    assert.equal(answer.status, 200);
    assert.deepEqual(
      answer.body.data.map((e: { id: number; op: string }) => [e.id, e.op]),
      [[created.body.data[0].page, 'create']],
    );

    const empty = await onB('GET', `/api/changes?since=${answer.body.meta.nextCursor}&wait=1`);
    assert.deepEqual(empty.body, { data: [], meta: { pageSize: 200, nextCursor: answer.body.meta.nextCursor } });
  });

  a.child.kill('SIGTERM');
  b.child.kill('SIGTERM');
  assert.deepEqual(await Promise.all([a.exit, b.exit]), [
    { code: 0, signal: null },
    { code: 0, signal: null },
  ]);
  assert.doesNotMatch(a.output() + b.output(), /"level":(50|60)/, 'no errors logged');
});
