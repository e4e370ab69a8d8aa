import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Acknowledgements, type Api, assertRevisionsListed, assertSawEachOnce, followFeed, runWriter } from './feed-writers.js';
import { addTestSite, createEmptyPostgresDatabase, TEST_DATABASE_URL, type TestSite, tempDir } from './helpers.js';
import { listening, type Started, start } from './server-process.js';

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
  timeout: 120_000,
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
  const site = await addTestSite(database.open());
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

  await t.test('a long-poll on A is answered within a second of a write committed on B', async () => {
    const caughtUp = (await onA('GET', '/api/changes')).body.meta.nextCursor as string;
    const waiting = onA('GET', `/api/changes?since=${caughtUp}&wait=10`).then((answer) => ({ answer, at: Date.now() }));
    await sleep(300);
    const created = await onB('POST', '/api/page', { page_usertitle: 'Written on B' });
    const acknowledgedAt = Date.now();
    assert.equal(created.status, 201);
    const { answer, at } = await waiting;
    assert.equal(answer.status, 200);
    assert.ok(at - acknowledgedAt < 1000, `answered ${at - acknowledgedAt} ms after B acknowledged the write`);
    assert.deepEqual(
      answer.body.data.map((e: { id: number; op: string }) => [e.id, e.op]),
      [[created.body.data[0].page, 'create']],
    );

    const started = Date.now();
    const empty = await onB('GET', `/api/changes?since=${answer.body.meta.nextCursor}&wait=1`);
    const took = Date.now() - started;
    assert.ok(took >= 950 && took < 2500, `an empty wait=1 took ${took} ms`);
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
