import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { testConfig } from './config.js';
import { startServer } from './server.js';

async function sqliteConfig(t: TestContext, overrides = {}) {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-start-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  return testConfig({ dataDir, databaseUrl: `sqlite:${path.join(dataDir, 'cms.sqlite')}`, host: '127.0.0.1', port: 0, ...overrides });
}

test('startServer migrates, seeds the demo once, listens, and closes idempotently', async (t) => {
  const config = await sqliteConfig(t, { demo: true });
  const first = await startServer(config, { demoPassword: 'demo password' });
  assert.equal(first.demoCreated?.owner.password, 'demo password');
  const response = await fetch(`${first.address}/api/page`, {
    headers: { 'x-api-id': first.demoCreated!.apiId, 'x-api-key': first.demoCreated!.apiKey },
  });
  assert.equal(response.status, 200);
  await Promise.all([first.close(), first.close()]);
  await assert.rejects(fetch(`${first.address}/healthz`), 'no longer listening');
  await assert.rejects(first.db.ping(), 'the database is closed');

  const second = await startServer(config);
  t.after(() => second.close());
  assert.equal(second.demoCreated, undefined);
});

test('a start on a port in use fails with EADDRINUSE (the CLI prints it as one line)', async (t) => {
  const config = await sqliteConfig(t);
  const running = await startServer(config);
  t.after(() => running.close());
  const port = Number(new URL(running.address).port);
  await assert.rejects(startServer({ ...config, port }), { code: 'EADDRINUSE' });
});
