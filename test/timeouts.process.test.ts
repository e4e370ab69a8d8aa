/**
 * The connection limits at their default values, on the real server process (slow-clients.process
 * .test.ts checks them at short values). Defaults matter on their own: the idle limit (30 s) is
 * longer than the headers limit (20 s) and equal to the long-poll's longest wait (30 s), and those
 * orders are what the short values cannot show. The checks run side by side, so the file takes
 * about the longest wait, 30 s, and almost no CPU.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DemoCredentials } from '../src/demo/credentials.js';
import { tempDir } from './helpers.js';
import { rawSocket } from './raw-socket.js';
import { basic, feedEnd, HANG_LIMIT_MS, listening, start } from './server-process.js';

test('at the default limits: a silent connection is closed, slow headers get a 408, a long-poll of the longest wait is answered', {
  timeout: HANG_LIMIT_MS,
}, async (t) => {
  const dataDir = await tempDir(t);
  const server = await start(t, { DATA_DIR: dataDir });
  await listening(server);
  const credentials = JSON.parse(await readFile(path.join(dataDir, 'demo-credentials.json'), 'utf8')) as DemoCredentials;
  const host = new URL(server.base).host;

  // The longest wait the feed documents, the same as the idle limit: the connection is silent both
  // ways while the server holds the answer, and it must not be cut.
  const authorization = basic(credentials);
  const longPoll = fetch(`${server.base}/api/changes?since=${await feedEnd(server.base, authorization)}&wait=30`, {
    headers: { authorization },
  });

  // Never sends a byte: the headers limit (20 s) ends it before the idle limit would.
  const silent = rawSocket(t, Number(new URL(server.base).port));

  // Headers a byte every 5 s: never idle, never done.
  const slow = rawSocket(t, Number(new URL(server.base).port));
  void (async () => {
    for (const byte of `GET /api/page HTTP/1.1\r\nHost: ${host}\r\n\r\n`) {
      if (slow.socket.destroyed) return;
      slow.socket.write(byte);
      await sleep(5000); // the slow client's own pace, the behaviour under test, not a wait for an event
    }
  })();

  await silent.closed;
  if (silent.received() !== '') assert.match(silent.received(), /^HTTP\/1\.1 408 [\s\S]*application\/problem\+json/);

  await slow.closed;
  assert.match(slow.received(), /^HTTP\/1\.1 408 /);
  assert.match(slow.received(), /content-type: application\/problem\+json/i);
  assert.match(slow.received(), /"type":"[^"]*\/problems\/request-timeout"/);

  const answered = await longPoll;
  assert.equal(answered.status, 200);
  assert.deepEqual(((await answered.json()) as { data: unknown[] }).data, [], 'held to the end of its wait: nothing changed');
  assert.equal(server.child.exitCode, null, 'the server is still running');
});
