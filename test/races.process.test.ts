/**
 * Writes that race, against the real server: two nodes on one PostgreSQL (with TEST_DATABASE_URL),
 * or one node on SQLite with this test process as a second writer on the same file, as the `cms`
 * command is. Parallel clients run each read-modify-write at once; the checks are invariants over
 * what was stored (no tree cycle, the limit held, one winner), never timings.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { undoChanges } from '../src/content/history/undo.service.js';
import { savePage } from '../src/content/pages/page.service.js';
import { createDatabase } from '../src/db/database.js';
import type { Db } from '../src/db/db.js';
import { readDemoCredentials } from '../src/demo/credentials.js';
import { LocalImageStorage } from '../src/storage/local-image-storage.js';
import { CHANGE_LOG, createEmptyPostgresDatabase, TEST_DATABASE_URL } from './helpers.js';
import { basic, fetchWhole, listening, type Started, start } from './server-process.js';

const ROUNDS = 25;

interface Cluster {
  nodes: Started[];
  /** The test's own handle on the database: the invariants are read through it, and undo runs on it as the CLI would. */
  db: Db;
  siteId: number;
  dataDir: string;
  /** Sends a request to node `i` (round robin), with the demo credentials. */
  send(i: number, method: string, target: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
}

async function cluster(t: TestContext): Promise<Cluster> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-races-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const database = TEST_DATABASE_URL ? await createEmptyPostgresDatabase(t) : undefined;
  const env = {
    DATA_DIR: dataDir,
    RATE_LIMIT_API: '0',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    // Failed deliveries come back at once, so that results are written while hooks are changed.
    WEBHOOK_RETRY_SCHEDULE: Array(20).fill('0.05').join(','),
    ...(database ? { DATABASE_URL: database.url } : {}),
  };
  const first = await start(t, env);
  await listening(first);
  const nodes = [first];
  if (database) {
    const second = await start(t, env);
    await listening(second);
    nodes.push(second);
  }
  const credentials = await readDemoCredentials({ dataDir });
  assert.ok(credentials, 'the first node wrote the demo credentials');
  const db = database ? database.open(4) : createDatabase(`sqlite:${path.join(dataDir, 'cms.sqlite')}`);
  if (!database) t.after(() => db.close());
  const authorization = basic(credentials);
  return {
    nodes,
    db,
    siteId: credentials.siteId,
    dataDir,
    send: (i, method, target, body, headers = {}) =>
      fetchWhole(`${nodes[i % nodes.length]!.base}${target}`, {
        method,
        headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
  };
}

/** The record a write answered. */
async function record<T = Record<string, unknown>>(response: Response): Promise<T> {
  const body = (await response.json()) as { data: T[] };
  return body.data[0]!;
}

const statuses = (responses: readonly Response[]) => responses.map((r) => r.status).sort();

/** The pages of the website that sit in a cycle of parents, read from the database. */
async function pagesInCycles(db: Db, siteId: number): Promise<number[]> {
  const rows = await db.kysely.selectFrom('pages').select(['page', 'page_parent']).where('site_id', '=', siteId).execute();
  const parentOf = new Map(rows.map((r) => [r.page, r.page_parent]));
  return rows
    .filter((row) => {
      const seen = new Set<number>();
      for (let at = parentOf.get(row.page); at !== undefined && at !== 0; at = parentOf.get(at)) {
        if (at === row.page) return true;
        if (seen.has(at)) return false;
        seen.add(at);
      }
      return false;
    })
    .map((r) => r.page);
}

test(`writes that race stay correct: ${TEST_DATABASE_URL ? 'two nodes on one PostgreSQL' : 'SQLite, the server and a second process'}`, {
  timeout: 600_000,
}, async (t) => {
  const c = await cluster(t);
  const created: number[] = [];
  const page = async (i: number, title: string, extra: Record<string, unknown> = {}) => {
    const response = await c.send(i, 'POST', '/api/page', { page_usertitle: title, ...extra });
    assert.equal(response.status, 201, await response.clone().text());
    const id = (await record<{ page: number }>(response)).page;
    created.push(id);
    return id;
  };

  await t.test('crossed moves on two nodes never make a cycle: exactly one of each pair is made', async () => {
    let bothMade = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const [a, b] = await Promise.all([page(0, `Move A${round}`), page(1, `Move B${round}`)]);
      const answers = await Promise.all([
        c.send(0, 'PATCH', `/api/page/${a}`, { page_parent: b }),
        c.send(1, 'PATCH', `/api/page/${b}`, { page_parent: a }),
      ]);
      if (answers.every((r) => r.status === 200)) bothMade++;
      assert.equal(answers.filter((r) => r.status === 200).length, bothMade ? 2 : 1, `round ${round}: ${statuses(answers)}`);
      const refused = answers.find((r) => r.status !== 200);
      if (refused) assert.match(await refused.text(), /this would make a cycle/);
    }
    assert.equal(bothMade, 0, `both moves were made in ${bothMade} of ${ROUNDS} rounds`);
    assert.deepEqual(await pagesInCycles(c.db, c.siteId), []);
  });

  await t.test('a page is never made under a page that is deleted at the same time', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const parent = await page(0, `Parent ${round}`);
      const [child, deleted] = await Promise.all([
        c.send(0, 'POST', '/api/page', { page_usertitle: `Child ${round}`, page_parent: parent }),
        c.send(1, 'DELETE', `/api/page/${parent}`),
      ]);
      if (child.status === 201) created.push((await record<{ page: number }>(child)).page);
      // Either the child came first (and the delete is refused), or the delete did (and the child's parent is gone).
      assert.deepEqual([child.status, deleted.status].sort(), child.status === 201 ? [201, 409] : [204, 400], `round ${round}`);
    }
    const orphans = await c.db.kysely
      .selectFrom('pages as p')
      .leftJoin('pages as parent', (join) => join.onRef('parent.page', '=', 'p.page_parent'))
      .select('p.page')
      .where('p.site_id', '=', c.siteId)
      .where('p.page_parent', '<>', 0)
      .where('parent.page', 'is', null)
      .execute();
    assert.deepEqual(orphans, [], 'no page has a parent that does not exist');
  });

  await t.test('parallel creates with one title get different aliases, and blogs different filenames', async () => {
    const pages = await Promise.all(Array.from({ length: 20 }, (_, i) => c.send(i, 'POST', '/api/page', { page_usertitle: 'Same title' })));
    assert.deepEqual(new Set(statuses(pages)), new Set([201]));
    const aliases = await Promise.all(pages.map(async (r) => (await record<{ page: number; page_alias: string }>(r)).page_alias));
    assert.equal(new Set(aliases).size, 20, aliases.join(' '));
    const holder = await page(0, 'Blog holder');
    const blogs = await Promise.all(
      Array.from({ length: 20 }, (_, i) => c.send(i, 'POST', '/api/blog', { page: holder, info_title: 'Same blog title' })),
    );
    assert.deepEqual(new Set(statuses(blogs)), new Set([201]));
    const filenames = await Promise.all(blogs.map(async (r) => (await record<{ info_filename: string }>(r)).info_filename));
    assert.equal(new Set(filenames).size, 20, filenames.join(' '));
  });

  await t.test('twelve writers with one ETag: one 200, eleven 412s', async () => {
    const id = await page(0, 'Contested');
    const etag = (await c.send(1, 'GET', `/api/page/${id}`)).headers.get('etag')!;
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => c.send(i, 'PATCH', `/api/page/${id}`, { page_summary: `writer ${i}` }, { 'if-match': etag })),
    );
    assert.deepEqual(statuses(answers), [200, ...Array(11).fill(412)]);
  });

  await t.test('every acknowledged create is in the change feed exactly once', async () => {
    await Promise.all(Array.from({ length: 40 }, (_, i) => page(i, `Feed ${i}`)));
    const seen = new Map<number, number>();
    let cursor = '';
    for (;;) {
      const answer = (await (await c.send(0, 'GET', `/api/changes?type=page&pageSize=500${cursor ? `&since=${cursor}` : ''}`)).json()) as {
        data: { id: number; op: string }[];
        meta: { nextCursor: string };
      };
      for (const change of answer.data) if (change.op === 'create') seen.set(change.id, (seen.get(change.id) ?? 0) + 1);
      if (answer.data.length === 0) break;
      cursor = answer.meta.nextCursor;
    }
    for (const id of created) assert.equal(seen.get(id), 1, `page ${id} is in the feed ${seen.get(id) ?? 0} times`);
  });

  await t.test('undo never overwrites a later write: each record it restores was last written by the application', async () => {
    const app = { kind: 'oauth', connectionId: 'races-app' } as const;
    const ids = await Promise.all(Array.from({ length: 30 }, (_, i) => page(i, `Undo ${i}`)));
    const { since } = await c.db.kysely
      .selectFrom('content_changes')
      .select((eb) => eb.fn.max('at').as('since'))
      .where('site_id', '=', c.siteId)
      .executeTakeFirstOrThrow();
    for (const id of ids) await savePage(c.db.kysely, CHANGE_LOG, c.siteId, { id, page_summary: 'written by the app' }, app);
    // The owner writes every page through the nodes while the undo runs beside them on its own connection.
    const undoActor = { kind: 'cli', id: 'races', name: 'races undo' } as const;
    const images = new LocalImageStorage(path.join(c.dataDir, 'images'));
    const [result, ...owner] = await Promise.all([
      undoChanges(
        { db: c.db.kysely, changeLog: CHANGE_LOG, images },
        { siteId: c.siteId, connectionIds: [app.connectionId], since: String(since) },
        undoActor,
      ),
      ...ids.map((id, i) => c.send(i, 'PATCH', `/api/page/${id}`, { page_summary: `the owner's ${i}` })),
    ]);
    assert.deepEqual(new Set(statuses(owner)), new Set([200]));
    const listed = [...result.restored, ...result.unchanged, ...result.skipped].map((r) => r.id).sort((x, y) => x - y);
    assert.deepEqual(
      listed,
      [...ids].sort((x, y) => x - y),
      'every record the application changed is listed once',
    );
    const changes = await c.db.kysely
      .selectFrom('content_changes')
      .select(['record_id', 'revision', 'actor_kind', 'actor_id', 'record_json'])
      .where('site_id', '=', c.siteId)
      .where('type', '=', 'page')
      .where('record_id', 'in', ids)
      .orderBy('record_id')
      .orderBy('revision')
      .execute();
    for (const id of ids) {
      const revisions = changes.filter((r) => r.record_id === id);
      revisions.forEach((r, i) => {
        if (r.actor_id !== undoActor.id) return;
        const overwritten = revisions[i - 1]!;
        assert.equal(
          overwritten.actor_id,
          app.connectionId,
          `page ${id}: the undo's revision ${r.revision} overwrote ${overwritten.actor_kind}`,
        );
      });
      // The owner wrote after the application: whether the undo came before that write or after
      // it (and was skipped), the owner's write is what the page shows.
      assert.match(revisions.at(-1)!.record_json, /the owner's/, `page ${id}`);
    }
    for (const s of result.skipped) assert.equal(s.by?.kind, 'api-key', `page ${s.id} was skipped for the owner's change: ${s.reason}`);
  });

  await t.test(
    "a hook disabled and enabled while the workers write its deliveries' results: every change answers, no result is lost to a deadlock",
    async () => {
      const receiver = http.createServer((_request, response) => response.writeHead(500).end());
      receiver.listen(0, '127.0.0.1');
      await once(receiver, 'listening');
      t.after(() => receiver.close());
      const { port } = receiver.address() as AddressInfo;
      const hook = await record<{ id: number }>(
        await c.send(0, 'POST', '/api/webhooks', { url: `http://127.0.0.1:${port}/failing`, events: ['*'] }),
      );
      let received = 0;
      receiver.on('request', () => received++);
      const changes: Response[] = [];
      for (let round = 0; round < 40; round++) {
        // Deliveries queued and being attempted (each fails at once and is due again 50 ms later)…
        await Promise.all([page(round, `Hooked ${round}`), page(round + 1, `Hooked ${round}b`)]);
        // …while the hook is disabled, which gives up its pending deliveries, and enabled again.
        const [disabled] = await Promise.all([
          c.send(round, 'PATCH', `/api/webhooks/${hook.id}`, { status: 'disabled' }),
          page(round + 1, `Hooked ${round}c`),
        ]);
        changes.push(disabled, await c.send(round + 1, 'PATCH', `/api/webhooks/${hook.id}`, { status: 'active' }));
      }
      assert.ok(received > 0, 'the receiver was called');
      assert.deepEqual(new Set(statuses(changes)), new Set([200]));
      for (const node of c.nodes) assert.doesNotMatch(node.output(), /deadlock|writing webhook delivery results failed/);
      assert.equal((await c.send(0, 'DELETE', `/api/webhooks/${hook.id}`)).status, 204);
    },
  );

  await t.test('the webhook limit holds under 70 parallel creates', async () => {
    const answers = await Promise.all(
      Array.from({ length: 70 }, (_, i) =>
        c.send(i, 'POST', '/api/webhooks', { url: `http://127.0.0.1:9/hook-${i}`, events: ['blog.deleted'] }),
      ),
    );
    assert.deepEqual(statuses(answers), [...Array(50).fill(201), ...Array(20).fill(409)]);
    const { n } = await c.db.kysely
      .selectFrom('webhooks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('site_id', '=', c.siteId)
      .executeTakeFirstOrThrow();
    assert.equal(Number(n), 50);
  });

  await t.test('parallel rotations: one 200, its secret signs, and the secret before it keeps its overlap', async () => {
    // A place under the limit for a hook whose secret has never been rotated.
    const { id: old } = await record<{ id: number }>(await c.send(0, 'GET', '/api/webhooks'));
    assert.equal((await c.send(0, 'DELETE', `/api/webhooks/${old}`)).status, 204);
    const hook = await record<{ id: number; secret: string }>(
      await c.send(0, 'POST', '/api/webhooks', { url: 'http://127.0.0.1:9/rotated', events: ['blog.deleted'] }),
    );
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => c.send(i, 'POST', `/api/webhooks/${hook.id}/rotate-secret`)));
    assert.deepEqual(statuses(answers), [200, ...Array(7).fill(409)]);
    const winner = await record<{ secret: string }>(answers.find((r) => r.status === 200)!);
    const stored = await c.db.kysely
      .selectFrom('webhooks')
      .select(['secret', 'previous_secret'])
      .where('id', '=', hook.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(stored, { secret: winner.secret, previous_secret: hook.secret });
  });

  await t.test('twelve webhook updates with one ETag: one 200, eleven 412s', async () => {
    const { id } = await record<{ id: number }>(await c.send(0, 'GET', '/api/webhooks'));
    const etag = (await c.send(1, 'GET', `/api/webhooks/${id}`)).headers.get('etag')!;
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => c.send(i, 'PATCH', `/api/webhooks/${id}`, { description: `writer ${i}` }, { 'if-match': etag })),
    );
    assert.deepEqual(statuses(answers), [200, ...Array(11).fill(412)]);
  });
});
