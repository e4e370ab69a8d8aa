import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { DemoCredentials } from '../src/demo/credentials.js';
import { basic, HANG_LIMIT_MS, listening, start } from './server-process.js';

test('npm start: demo data on first start, pages over HTTP, clean SIGTERM, nothing new on restart', {
  timeout: HANG_LIMIT_MS,
}, async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-server-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));

  const first = await start(t, { DATA_DIR: dataDir });
  await listening(first);
  const file = path.join(dataDir, 'demo-credentials.json');
  const credentials = JSON.parse(await readFile(file, 'utf8')) as DemoCredentials;
  // The one-time print carries everything needed to log in and call the API.
  for (const shown of [credentials.owner.email, credentials.owner.password, credentials.apiId, credentials.apiKey, file]) {
    assert.ok(first.output().includes(shown), `printed: ${shown}`);
  }
  assert.ok(first.output().includes(`curl -u ${credentials.apiId}:${credentials.apiKey} ${first.base}/api/page`));

  const response = await fetch(`${first.base}/api/page?pageSize=50`, { headers: { authorization: basic(credentials) } });
  assert.equal(response.status, 200);
  const body = (await response.json()) as { data: Array<{ page_usertitle: string; page_parent: number }>; meta: { total: number } };
  assert.equal(body.meta.total, 7);
  assert.deepEqual(
    body.data.filter((p) => p.page_parent === 0).map((p) => p.page_usertitle),
    ['Home', 'About us', 'Members', 'Blog'],
  );

  const blogs = await fetch(`${first.base}/api/blog`, { headers: { authorization: basic(credentials) } });
  assert.equal(blogs.status, 200);
  assert.ok(((await blogs.json()) as { meta: { total: number } }).meta.total >= 3, 'the demo has articles');

  // A request the server has started on is answered before it exits.
  const inFlight = fetch(`${first.base}/api/page`, { headers: { authorization: basic(credentials), 'x-request-id': 'in-flight' } });
  // Its log line, awaited on stdout's 'data' events (or the exit, which the status check then reports).
  await Promise.race([
    first.exit,
    new Promise<void>((resolve) => {
      const check = () => {
        if (!first.output().includes('"reqId":"in-flight"')) return;
        first.child.stdout!.off('data', check);
        resolve();
      };
      first.child.stdout!.on('data', check);
      check();
    }),
  ]);
  first.child.kill('SIGTERM');
  assert.equal((await inFlight).status, 200);
  assert.deepEqual(await first.exit, { code: 0, signal: null });
  assert.match(first.output(), /shutting down/);

  const second = await start(t, { DATA_DIR: dataDir });
  await listening(second);
  assert.match(
    second.output(),
    new RegExp(`Demo website exists already; its credentials are in ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
  );
  assert.ok(!second.output().includes(credentials.apiKey), 'secrets are printed only on the first start');
  assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), credentials);
  const again = await fetch(`${second.base}/api/page`, { headers: { authorization: basic(credentials) } });
  assert.equal(((await again.json()) as { meta: { total: number } }).meta.total, 7, 'no second set of demo pages');
  second.child.kill('SIGINT');
  assert.deepEqual(await second.exit, { code: 0, signal: null });
});

test('a configuration mistake stops the start with one clear line and exit code 1', async (t) => {
  const server = await start(t, { DATA_DIR: tmpdir(), LOG_LEVEL: 'loud' });
  assert.deepEqual(await server.exit, { code: 1, signal: null });
  assert.equal(server.output(), 'Configuration error: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent\n');
});

test('DEMO_DATA=false starts on an empty database without creating anything', async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-server-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const server = await start(t, { DATA_DIR: dataDir, DEMO_DATA: 'false', LOG_LEVEL: 'warn' });
  await listening(server);
  assert.equal((await fetch(`${server.base}/readyz`)).status, 200);
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exit, { code: 0, signal: null });
  assert.equal(server.output(), '');
  await assert.rejects(readFile(path.join(dataDir, 'demo-credentials.json')), { code: 'ENOENT' });
});
