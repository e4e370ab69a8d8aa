/**
 * Webhooks across processes: a delivery committed but not yet sent when the server is SIGKILLed is
 * sent after the restart, and two nodes on one PostgreSQL database send every delivery once.
 * Every request is verified with `standardwebhooks`, as a receiver would.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { readDemoCredentials } from '../src/demo/credentials.js';
import { createEmptyPostgresDatabase, ownPostgresDatabase, TEST_DATABASE_URL } from './helpers.js';
import { basic, HANG_LIMIT_MS, listening, type Started, start } from './server-process.js';
import { until } from './until.js';
import { webhookReceiver } from './webhook-receiver.js';

async function dataDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cms-hooks-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function api(base: string, authorization: string, method: string, target: string, body?: object) {
  const response = await fetch(`${base}${target}`, {
    method,
    headers: { authorization, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** Resolves once the hook's `count` deliveries are each recorded delivered, as the API lists them. */
function recorded(base: string, authorization: string, hookId: number, count: number): Promise<unknown> {
  return until(`${count} deliveries recorded delivered`, async () => {
    const { body } = await api(base, authorization, 'GET', `/api/webhooks/${hookId}/deliveries`);
    const list = body.data as { state: string }[];
    return list.length === count && list.every((d) => d.state === 'delivered');
  });
}

// The suite's own database: the SQLite suite runs the SQLite case, the PostgreSQL suite the other.
const CASES = [TEST_DATABASE_URL ? { database: 'postgres' } : { database: 'sqlite' }] as const;

for (const c of CASES) {
  test(`a delivery committed but not sent when the server is SIGKILLed is sent after the restart: ${c.database}`, {
    timeout: HANG_LIMIT_MS,
  }, async (t) => {
    const dir = await dataDir(t);
    const databaseUrl = c.database === 'postgres' ? (await ownPostgresDatabase(t, 'hooks')).url : undefined;
    const receiver = await webhookReceiver(t);
    const env = {
      DATA_DIR: dir,
      RATE_LIMIT_API: '0',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    // The first server looks for due deliveries only as it starts: whatever is written after that
    // is committed and never sent before the kill.
    let server: Started = await start(t, { ...env, WEBHOOK_POLL_MS: '60000' });
    await listening(server);
    const credentials = await readDemoCredentials({ dataDir: dir });
    assert.ok(credentials);
    const authorization = basic(credentials);
    const created = await api(server.base, authorization, 'POST', '/api/webhooks', { url: receiver.url, events: ['page.created'] });
    assert.equal(created.status, 201);
    receiver.trust(created.body.data[0].secret);
    const pages: number[] = [];
    for (let i = 0; i < 5; i++) {
      const written = await api(server.base, authorization, 'POST', '/api/page', { page_usertitle: `Before the kill ${i}` });
      assert.equal(written.status, 201);
      pages.push(written.body.data[0].page);
    }
    server.child.kill('SIGKILL');
    await server.exit;
    assert.equal(receiver.received.length, 0, 'nothing was sent before the kill');

    server = await start(t, env);
    await listening(server);
    await receiver.waitFor(5, 20_000);
    // None of the five is sent again: once they are recorded, one more write's delivery is awaited.
    // The poll that sent it came after those records and would have claimed any of the five still
    // due (older ones first); stopping the server then ends every attempt it had begun.
    const hookId = created.body.data[0].id as number;
    await recorded(server.base, authorization, hookId, 5);
    const later = await api(server.base, authorization, 'POST', '/api/page', { page_usertitle: 'After the restart' });
    assert.equal(later.status, 201);
    pages.push(later.body.data[0].page);
    await receiver.waitFor(6, 20_000);
    server.child.kill('SIGTERM');
    await server.exit;
    const { received } = receiver;
    assert.equal(received.length, 6, 'no delivery sent twice');
    assert.ok(
      received.every((r) => r.verified),
      'each verified with standardwebhooks',
    );
    assert.deepEqual(received.map((r) => r.verified!.data.id).sort(), [...pages].sort(), 'one delivery per acknowledged write');
    assert.equal(new Set(received.map((r) => r.id)).size, 6);
  });
}

/** Attempts one node has in flight at once for one website's hooks, in the two-node test. */
const PER_SITE = 5;

test('two nodes on one PostgreSQL database: 20 writes across both, 20 deliveries, none twice', {
  skip: TEST_DATABASE_URL ? false : 'needs PostgreSQL (set TEST_DATABASE_URL): several nodes cannot share a SQLite file',
  timeout: HANG_LIMIT_MS,
}, async (t) => {
  const database = await createEmptyPostgresDatabase(t);
  const dir = await dataDir(t);
  const receiver = await webhookReceiver(t);
  // The receiver holds its answers until both nodes have their site's share of attempts in flight:
  // then each node has claimed, deliveries are still due, and both nodes claim again at once when
  // the answers go out. Later requests are answered at once.
  let held: ServerResponse[] | undefined = [];
  receiver.answerWith((_request, response) => {
    if (!held) return void response.writeHead(200).end();
    held.push(response);
    if (held.length < 2 * PER_SITE) return;
    for (const waiting of held) waiting.writeHead(200).end();
    held = undefined;
  });
  const env = {
    DATABASE_URL: database.url,
    DATA_DIR: dir,
    RATE_LIMIT_API: '0',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_POLL_MS: '10',
    WEBHOOK_CONCURRENCY_PER_SITE: String(PER_SITE),
  };
  const [a, b] = await Promise.all([start(t, env), start(t, env)]);
  await Promise.all([listening(a!), listening(b!)]);
  const credentials = await readDemoCredentials({ dataDir: dir });
  assert.ok(credentials);
  const authorization = basic(credentials);
  const created = await api(a!.base, authorization, 'POST', '/api/webhooks', { url: receiver.url, events: ['*'] });
  assert.equal(created.status, 201);
  receiver.trust(created.body.data[0].secret);

  const writes = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      api((i % 2 ? b : a)!.base, authorization, 'POST', '/api/page', { page_usertitle: `Node ${i % 2 ? 'B' : 'A'} ${i}` }),
    ),
  );
  assert.ok(writes.every((w) => w.status === 201));
  await receiver.waitFor(20, 20_000);
  // A delivery two nodes both claimed would be sent by both in the polls that sent it first. Once
  // each is recorded and both nodes have stopped, which ends every attempt they had begun, the
  // receiver has all it will get.
  await recorded(a!.base, authorization, created.body.data[0].id, 20);
  for (const node of [a!, b!]) node.child.kill('SIGTERM');
  await Promise.all([a!.exit, b!.exit]);
  const { received } = receiver;
  assert.equal(received.length, 20, 'no delivery twice');
  assert.ok(received.every((r) => r.verified));
  assert.equal(new Set(received.map((r) => r.id)).size, 20, 'twenty distinct webhook-ids');
  assert.deepEqual(received.map((r) => r.verified!.data.id).sort(), writes.map((w) => w.body.data[0].page).sort());
  const db = database.open();
  const attempts = await db.kysely.selectFrom('webhook_attempts').select(['delivery_id']).execute();
  assert.equal(attempts.length, 20, 'one attempt each');
});
