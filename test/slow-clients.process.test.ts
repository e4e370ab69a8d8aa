/**
 * Slow, silent and malformed clients against the real server process, over raw sockets: an idle
 * connection is closed, a request whose headers or body stop arriving gets a 408 problem and is
 * closed (a stalled upload leaves nothing staged), a refused oversized OAuth form does not leave
 * the connection hanging, two Host headers are a 400, and a long-poll held past the idle limit is
 * answered. Short limits are set for the test; timeouts.process.test.ts runs at the defaults.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readdir, readFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DemoCredentials } from '../src/demo/credentials.js';
import { tempDir } from './helpers.js';
import { basic, feedEnd, HANG_LIMIT_MS, listening, type Started, start } from './server-process.js';
import { until } from './until.js';

interface Opened {
  socket: Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves with the milliseconds from opening until the server closed the connection. */
  closed: Promise<number>;
}

function open(t: TestContext, base: string): Promise<Opened> {
  const url = new URL(base);
  const began = Date.now();
  const socket = connect(Number(url.port), url.hostname);
  t.after(() => socket.destroy());
  let received = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => {});
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now() - began)));
  return once(socket, 'connect').then(() => ({ socket, received: () => received, closed }));
}

/** Writes `bytes` one at a time, `everyMs` apart, until done or the socket closes. */
async function trickle(socket: Socket, bytes: string, everyMs: number): Promise<void> {
  for (const byte of bytes) {
    if (socket.destroyed || !socket.writable) return;
    socket.write(byte);
    await sleep(everyMs); // the slow client's own pace, the behaviour under test, not a wait for an event
  }
}

/** The status line and the problem body of a raw answer. */
function answer(raw: string): { status: number; headers: string; body: Record<string, unknown> } {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head.toLowerCase(), body: body ? JSON.parse(body) : {} };
}

let server: Started;
/**
 * A server whose idle limit is far beyond its request limit, for the requests that arrive slowly.
 * With the idle limit of `server` (1 s), a trickle held up for a second by a busy machine left the
 * connection idle, and the idle limit closed it without an answer before the request limit's 408.
 */
let patient: Started;
let authorization: string;
let dataDir: string;

test('slow, silent and malformed clients', { timeout: HANG_LIMIT_MS }, async (t) => {
  dataDir = await tempDir(t);
  const env = { DATA_DIR: dataDir, HTTP_REQUEST_TIMEOUT_SECONDS: '2', RATE_LIMIT_TOKEN: '0' };
  server = await start(t, { ...env, HTTP_IDLE_TIMEOUT_SECONDS: '1' });
  await listening(server);
  // The same data folder: the demo data is there already, and the staging folder is the same.
  patient = await start(t, { ...env, HTTP_IDLE_TIMEOUT_SECONDS: '600' });
  await listening(patient);
  const credentials = JSON.parse(await readFile(path.join(dataDir, 'demo-credentials.json'), 'utf8')) as DemoCredentials;
  authorization = basic(credentials);
  const host = new URL(server.base).host;
  const patientHost = new URL(patient.base).host;

  await t.test('a connection that sends nothing is closed after the idle timeout', async (t) => {
    const idle = await open(t, server.base);
    const ms = await idle.closed;
    // Not before the idle limit; how much after is the machine's (a hang is the test's timeout).
    assert.ok(ms >= 900, `closed after ${ms} ms`);
    assert.equal(idle.received(), '', 'nothing is sent to a connection that asked nothing');
  });

  await t.test('a long-poll held past the idle limit is answered, not cut', async () => {
    // From the end of the feed, three times the idle limit: the connection is silent both ways
    // while the server holds the answer.
    const held = await fetch(`${server.base}/api/changes?since=${await feedEnd(server.base, authorization)}&wait=3`, {
      headers: { authorization },
    });
    assert.equal(held.status, 200);
    assert.deepEqual(((await held.json()) as { data: unknown[] }).data, [], 'held to the end of its wait: nothing changed');
  });

  await t.test('headers that arrive a byte at a time get a 408 problem once the request timeout passes', async (t) => {
    const slow = await open(t, patient.base);
    void trickle(
      slow.socket,
      `GET /api/page HTTP/1.1\r\nHost: ${patientHost}\r\nAuthorization: ${authorization}\r\nX-Filler: ${'x'.repeat(200)}\r\n\r\n`,
      300,
    );
    // The trickle would take a minute and a half: a 408 is the request timeout's, not its end.
    await slow.closed;
    const { status, body } = answer(slow.received());
    assert.equal(status, 408, slow.received());
    assert.equal(body.type, '/problems/request-timeout');
  });

  await t.test('a JSON body that stops arriving gets a 408 problem and writes nothing', async (t) => {
    const title = `slow body ${Date.now()}`;
    const json = JSON.stringify({ page_usertitle: title });
    const slow = await open(t, patient.base);
    slow.socket.write(
      `POST /api/page HTTP/1.1\r\nHost: ${patientHost}\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nContent-Length: ${json.length + 50}\r\n\r\n`,
    );
    // A byte every 300 ms: never idle for a second, but never done either.
    void trickle(slow.socket, json + ' '.repeat(50), 300);
    await slow.closed;
    const { status, headers, body } = answer(slow.received());
    assert.equal(status, 408, slow.received());
    assert.match(headers, /content-type: application\/problem\+json/);
    assert.equal(body.status, 408);
    const list = await fetch(`${patient.base}/api/page?title=${encodeURIComponent(title)}`, { headers: { authorization } });
    assert.equal(((await list.json()) as { meta: { total: number } }).meta.total, 0, 'the page was not created');
  });

  await t.test('an upload that stops arriving gets a 408 problem and leaves nothing staged', async (t) => {
    const boundary = 'slowboundary';
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="data"\r\n\r\n{"info_title":"Slow upload","page":1}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="uploadPrimaryImage"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`;
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const slow = await open(t, patient.base);
    slow.socket.write(
      `POST /api/blog HTTP/1.1\r\nHost: ${patientHost}\r\nAuthorization: ${authorization}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 100000\r\n\r\n`,
    );
    slow.socket.write(head);
    slow.socket.write(png);
    void trickle(slow.socket, 'x'.repeat(100), 300);
    const staging = path.join(dataDir, 'images', '.staging');
    await until('the upload to be staged', async () => (await readdir(staging).catch(() => [])).length === 1);
    await slow.closed;
    assert.equal(answer(slow.received()).status, 408, slow.received());
    // Clean-up runs as the request's stream fails, after the answer.
    await until('no staged upload left behind', async () => (await readdir(staging).catch(() => [])).length === 0);
  });

  await t.test('after an oversized OAuth form is refused, the connection answers at once or is closed', async (t) => {
    for (const endpoint of ['/api/auth/token', '/api/auth/revoke', '/api/auth/reg']) {
      const conn = await open(t, server.base);
      const type = endpoint.endsWith('/reg') ? 'application/json' : 'application/x-www-form-urlencoded';
      const size = 2 * 1024 * 1024;
      conn.socket.write(`POST ${endpoint} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: ${type}\r\nContent-Length: ${size}\r\n\r\n`);
      conn.socket.write('a'.repeat(64 * 1024));
      // The client, seeing the early answer or not, goes on with its next request on the same
      // connection (the pause is its pace, not a wait for an event); then the connection either
      // answers it or is closed.
      let closed = false;
      void conn.closed.then(() => (closed = true));
      await sleep(200);
      if (!conn.socket.destroyed) conn.socket.write(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      const outcome = await until('the next answer or the close', async () =>
        closed ? 'closed' : /HTTP\/1\.1 200[\s\S]*"status":"ok"/.test(conn.received()) ? 'open' : undefined,
      );
      const refusal = answer(conn.received());
      assert.ok(refusal.status === 413 || refusal.status === 400, `${endpoint}: refused (${conn.received().slice(0, 200)})`);
      if (outcome === 'open') {
        assert.match(conn.received(), /HTTP\/1\.1 200[\s\S]*"status":"ok"/, `${endpoint}: the next request was answered`);
      } else {
        assert.match(refusal.headers, /connection: close/, `${endpoint}: the refusal says the connection closes`);
      }
    }
  });

  await t.test('two Host headers are a 400 problem', async (t) => {
    const conn = await open(t, server.base);
    conn.socket.write(`GET /api/page HTTP/1.1\r\nHost: ${host}\r\nHost: evil.example\r\nAuthorization: ${authorization}\r\n\r\n`);
    await until('the whole answer', async () => {
      try {
        return answer(conn.received()).status > 0;
      } catch {
        return false;
      }
    });
    const { status, headers, body } = answer(conn.received());
    assert.equal(status, 400, conn.received());
    assert.match(headers, /content-type: application\/problem\+json/);
    assert.match(String(body.detail), /Host/);
  });

  assert.equal(server.child.exitCode, null, 'the server is still running');
  assert.equal(patient.child.exitCode, null, 'the patient server is still running');
});
