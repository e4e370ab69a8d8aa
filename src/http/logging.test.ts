import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { createTestDatabase } from '../../test/helpers.js';
import { buildApp } from '../app.js';
import { type LogLevel, testConfig } from '../config.js';
import { requestIds } from './logging.js';

/** An app whose log lines are collected, with one extra route that logs a header at warn and at info. */
async function appLoggingAt(t: Parameters<typeof createTestDatabase>[0], logLevel: LogLevel) {
  const lines: Record<string, unknown>[] = [];
  const app = await buildApp({
    config: testConfig({ logLevel }),
    db: await createTestDatabase(t),
    logStream: { write: (line: string) => lines.push(JSON.parse(line)) },
  });
  app.get('/log-probe', (request, reply) => {
    request.log.info({ probe: 'info' }, 'probe at info');
    request.log.warn({ headers: { authorization: 'Bearer secret-token' } }, 'probe at warn');
    reply.send('ok');
  });
  t.after(() => app.close());
  return { app, lines };
}

test('a request logs under its request id, redacted, whether or not earlier lines were written', async (t) => {
  const { app, lines } = await appLoggingAt(t, 'info');
  await app.inject({ url: '/log-probe', headers: { 'x-request-id': 'req-info' } });
  const mine = lines.filter((l) => l.reqId === 'req-info').map((l) => l.msg);
  assert.deepEqual(mine, ['incoming request', 'probe at info', 'probe at warn', 'request completed']);
  const warned = lines.find((l) => l.msg === 'probe at warn') as { headers: { authorization: string } };
  assert.equal(warned.headers.authorization, '[redacted]');
});

test('at LOG_LEVEL=warn a request writes only its warnings, still with its request id and redaction', async (t) => {
  const { app, lines } = await appLoggingAt(t, 'warn');
  await app.inject({ url: '/healthz', headers: { 'x-request-id': 'req-quiet' } });
  assert.deepEqual(
    lines.filter((l) => l.reqId === 'req-quiet'),
    [],
  );
  await app.inject({ url: '/log-probe', headers: { 'x-request-id': 'req-warn' } });
  const mine = lines.filter((l) => l.reqId === 'req-warn');
  assert.deepEqual(
    mine.map((l) => l.msg),
    ['probe at warn'],
  );
  assert.equal((mine[0] as { headers: { authorization: string } }).headers.authorization, '[redacted]');
});

const request = (id?: string | string[]) => ({ headers: id === undefined ? {} : { 'x-request-id': id } }) as unknown as IncomingMessage;

test("a request's id is the client's plain X-Request-Id, or this process's prefix and a count, never the same twice", () => {
  const next = requestIds();
  const own = Array.from({ length: 1000 }, () => next(request()));
  assert.equal(new Set(own).size, 1000, 'no id repeats');
  const prefixOf = (id: string) => id.slice(0, id.lastIndexOf('-'));
  const prefix = prefixOf(own[0]!);
  assert.match(prefix, /^[\w-]{16}$/, '96 random bits, base64url');
  assert.ok(
    own.every((id) => id.startsWith(`${prefix}-`)),
    'one prefix per process',
  );
  assert.notEqual(prefixOf(requestIds()(request())), prefix, 'another process draws another prefix');

  assert.equal(next(request('abc-123')), 'abc-123');
  assert.equal(next(request('a.b_c')), 'a.b_c');
  for (const refused of ['', 'x'.repeat(65), 'has space', 'line\u2028break', '<script>', ['a', 'b']]) {
    assert.ok(next(request(refused)).startsWith(`${prefix}-`), `not taken: ${JSON.stringify(refused)}`);
  }
});
