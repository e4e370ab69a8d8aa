/**
 * Webhooks across processes: a delivery committed but not yet sent when the server is SIGKILLed is
 * sent after the restart, and two nodes on one PostgreSQL database send every delivery once.
 * Every request is verified with `standardwebhooks`, as a receiver would.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { readDemoCredentials } from '../src/demo/credentials.js';
import { createEmptyPostgresDatabase, ownPostgresDatabase, TEST_DATABASE_URL } from './helpers.js';
import { basic, listening, type Started, start } from './server-process.js';
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

const CASES = [{ database: 'sqlite' }, ...(TEST_DATABASE_URL ? [{ database: 'postgres' }] : [])] as const;

for (const c of CASES) {
  test(`a delivery committed but not sent when the server is SIGKILLed is sent after the restart: ${c.database}`, {
    timeout: 90_000,
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
    const received = await receiver.waitFor(5, 20_000);
    await sleep(500);
    assert.equal(receiver.received.length, 5);
    assert.ok(
      received.every((r) => r.verified),
      'each verified with standardwebhooks',
    );
    assert.deepEqual(received.map((r) => r.verified!.data.id).sort(), [...pages].sort(), 'one delivery per acknowledged write');
    assert.equal(new Set(received.map((r) => r.id)).size, 5);
    server.child.kill('SIGTERM');
    await server.exit;
  });
}

test('two nodes on one PostgreSQL database: 20 writes across both, 20 deliveries, none twice', {
  skip: TEST_DATABASE_URL ? false : 'needs PostgreSQL (set TEST_DATABASE_URL): several nodes cannot share a SQLite file',
  timeout: 120_000,
}, async (t) => {
  const database = await createEmptyPostgresDatabase(t);
  const dir = await dataDir(t);
  const receiver = await webhookReceiver(t);
  // Each attempt takes a while, so that both nodes have deliveries due at once to contend for.
  receiver.answerWith((_request, response) => setTimeout(() => response.writeHead(200).end(), 20));
  const env = {
    DATABASE_URL: database.url,
    DATA_DIR: dir,
    RATE_LIMIT_API: '0',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_POLL_MS: '10',
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
  const received = await receiver.waitFor(20, 20_000);
  await sleep(1000);
  assert.equal(receiver.received.length, 20, 'no delivery twice');
  assert.ok(received.every((r) => r.verified));
  assert.equal(new Set(received.map((r) => r.id)).size, 20, 'twenty distinct webhook-ids');
  assert.deepEqual(received.map((r) => r.verified!.data.id).sort(), writes.map((w) => w.body.data[0].page).sort());
  const db = database.open();
  const attempts = await db.kysely.selectFrom('webhook_attempts').select(['delivery_id']).execute();
  assert.equal(attempts.length, 20, 'one attempt each');
});
