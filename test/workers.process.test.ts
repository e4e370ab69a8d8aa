/**
 * WORKERS=2 on one SQLite file: the API rate limit counts once for the machine, each webhook
 * delivery is sent once, a worker that dies is replaced, and SIGTERM stops every worker after its
 * in-flight requests. On SQLite only (the PostgreSQL suite's two-node tests hold the same across
 * machines).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { readDemoCredentials } from '../src/demo/credentials.js';
import { TEST_DATABASE_URL } from './helpers.js';
import { basic, feedEnd, listening, logLines, start } from './server-process.js';
import { until } from './until.js';
import { webhookReceiver } from './webhook-receiver.js';

/** A request on a connection of its own: the cluster's primary hands each new connection to the next worker. */
function request(base: string, method: string, target: string, headers: Record<string, string> = {}, body?: object) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const payload = body ? JSON.stringify(body) : undefined;
    const req = http.request(
      `${base}${target}`,
      { method, agent: false, headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The ids of the workers that answer /readyz now. */
async function readyWorkers(base: string, tries: number): Promise<Set<number>> {
  const seen = new Set<number>();
  for (let i = 0; i < tries; i++) {
    const answer = await request(base, 'GET', '/readyz');
    if (answer.status === 200) seen.add((JSON.parse(answer.body) as { worker: number }).worker);
  }
  return seen;
}

async function twoWorkers(t: TestContext, env: Record<string, string>) {
  const dir = await mkdtemp(path.join(tmpdir(), 'cms-workers-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const server = await start(t, { DATA_DIR: dir, WORKERS: '2', ...env });
  await listening(server);
  // Both listen once each answers /readyz: the primary hands connections to them in turn.
  // A start takes long on a busy machine: the limit only turns a hang into a failure.
  await until('both workers answer', async () => (await readyWorkers(server.base, 4)).size === 2, 150_000);
  const credentials = await readDemoCredentials({ dataDir: dir });
  assert.ok(credentials);
  return { server, authorization: basic(credentials) };
}

const skip = TEST_DATABASE_URL ? 'the SQLite suite runs it' : false;

test('two workers on one SQLite file: the API rate limit counts once for both, and each webhook delivery is sent once', {
  skip,
  timeout: 180_000,
}, async (t) => {
  const receiver = await webhookReceiver(t);
  const { server, authorization } = await twoWorkers(t, {
    RATE_LIMIT_API: '20',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_POLL_MS: '10',
  });

  const hook = await request(server.base, 'POST', '/api/webhooks', { authorization }, { url: receiver.url, events: ['page.created'] });
  assert.equal(hook.status, 201, hook.body);
  receiver.trust((JSON.parse(hook.body) as { data: [{ secret: string }] }).data[0].secret);
  const writes = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      request(server.base, 'POST', '/api/page', { authorization }, { page_usertitle: `Worker page ${i}` }),
    ),
  );
  assert.deepEqual(
    writes.map((w) => w.status),
    Array(10).fill(201),
  );
  await receiver.waitFor(10, 30_000);
  // Every delivery recorded delivered: an attempt two workers both claimed would have been sent by now.
  const hookId = (JSON.parse(hook.body) as { data: [{ id: number }] }).data[0].id;
  await until('10 deliveries recorded delivered', async () => {
    const answer = await request(server.base, 'GET', `/api/webhooks/${hookId}/deliveries`, { authorization });
    if (answer.status === 429) return false;
    const list = (JSON.parse(answer.body) as { data: { state: string }[] }).data;
    return list.length === 10 && list.every((d) => d.state === 'delivered');
  });

  // The requests above counted too (12 or more of the 20: the hook, the ten pages, the reads of the
  // deliveries); the window is a minute long. So at most 8 of these pass, whichever worker answers
  // them; counted per worker, 28 or more would.
  const answers: number[] = [];
  for (let i = 0; i < 40; i++) answers.push((await request(server.base, 'GET', '/api/page?pageSize=1', { authorization })).status);
  const passed = answers.filter((s) => s === 200).length;
  assert.ok(
    answers.every((s) => s === 200 || s === 429),
    answers.join(' '),
  );
  assert.ok(
    answers.slice(-10).every((s) => s === 429),
    `the last ten were refused: ${answers.join(' ')}`,
  );
  assert.ok(passed <= 8, `at most 20 in the window across both workers: ${passed} GETs passed after 12 or more requests`);
  const workers = new Set(
    logLines(server)
      .filter((l) => (l.req as { url?: string } | undefined)?.url === '/api/page?pageSize=1')
      .map((l) => l.worker),
  );
  assert.equal(workers.size, 2, 'both workers answered the GETs');

  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exit, { code: 0, signal: null });
  assert.equal(receiver.received.length, 10, 'no delivery sent twice');
  assert.equal(new Set(receiver.received.map((r) => r.id)).size, 10);
});

test('two workers: one that dies is replaced, and SIGTERM lets every worker finish its in-flight requests', {
  skip,
  timeout: 180_000,
}, async (t) => {
  const { server, authorization } = await twoWorkers(t, { RATE_LIMIT_API: '0' });
  const pids = () =>
    new Map(
      logLines(server)
        .filter((l) => String(l.msg).startsWith('Server listening'))
        .map((l) => [l.worker as number, l.pid as number]),
    );
  const [[deadId, deadPid]] = [...pids()] as [[number, number]];
  process.kill(deadPid, 'SIGKILL');
  await until('a new worker listens', async () => pids().size === 3, 150_000);
  assert.ok(logLines(server).some((l) => l.msg === 'a worker exited; starting another in its place' && l.exited === deadId));
  await until('two workers answer', async () => (await readyWorkers(server.base, 4)).size === 2, 30_000);

  // Long-polls that the workers hold when SIGTERM comes are answered before the workers exit, and
  // the server exits 0. The signal waits until each request is logged as arrived: one sent but
  // not yet read by a worker would be refused as the server closes (a 503), which is right for a
  // request that comes too late, and not what this test is about.
  const target = `/api/changes?since=${await feedEnd(server.base, authorization)}&wait=5`;
  const inFlight = Array.from({ length: 4 }, () => request(server.base, 'GET', target, { authorization }));
  await until(
    'the four long-polls are held',
    async () =>
      logLines(server).filter((l) => l.msg === 'incoming request' && (l.req as { url?: string } | undefined)?.url === target).length === 4,
  );
  server.child.kill('SIGTERM');
  const answers = await Promise.all(inFlight);
  assert.deepEqual(await server.exit, { code: 0, signal: null });
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 200, 200],
  );
  const stopped = logLines(server).filter((l) => l.msg === 'shutting down: finishing in-flight requests');
  assert.equal(new Set(stopped.map((l) => l.worker)).size, 2, 'both workers drained');
});
