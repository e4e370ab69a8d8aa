/**
 * closeIdleConnections on a real HTTP server: the idle limit closes a connection that waits for its
 * client (silent from the start, a body that stopped arriving, an answer the client does not read)
 * and never one whose request arrived whole and is still being answered. Each handler here waits
 * for its socket's own idle timer to fire before it answers, so the tests wait for events: the
 * limit is short only so that they do not wait long.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { type TestContext, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { rawSocket } from '../../test/raw-socket.js';
import { closeIdleConnections } from './idle-timeout.js';

const IDLE_MS = 100;

/** Resolves once the socket's idle timer has fired (the moment Node would have destroyed it). */
function idleTimerFired(socket: Socket): Promise<unknown> {
  return once(socket, 'timeout');
}

async function server(t: TestContext, routes: (app: FastifyInstance) => void): Promise<{ port: number; serverSockets: Socket[] }> {
  const app = Fastify({ connectionTimeout: IDLE_MS, keepAliveTimeout: 60_000 });
  closeIdleConnections(app.server);
  const serverSockets: Socket[] = [];
  app.server.on('connection', (socket: Socket) => serverSockets.push(socket));
  routes(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => {
    app.server.closeAllConnections();
    return app.close();
  });
  const address = app.server.address();
  assert.ok(address && typeof address === 'object');
  return { port: address.port, serverSockets };
}

test('a request that arrived whole is answered however long past the idle limit its answer takes', { timeout: 10_000 }, async (t) => {
  const { port } = await server(t, (app) => {
    app.get('/held', async (request) => {
      await idleTimerFired(request.raw.socket);
      return { held: true };
    });
    // The shape of a queued upload: the body read to its end, then the answer waits.
    app.post('/upload', async (request, reply) => {
      await idleTimerFired(request.raw.socket);
      return reply.code(201).send({ got: (request.body as { name: string }).name });
    });
  });
  const held = await fetch(`http://127.0.0.1:${port}/held`);
  assert.equal(held.status, 200);
  assert.deepEqual(await held.json(), { held: true });
  const upload = await fetch(`http://127.0.0.1:${port}/upload`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'photo' }),
  });
  assert.equal(upload.status, 201);
  assert.deepEqual(await upload.json(), { got: 'photo' });
});

test('a connection that sends nothing is closed by the idle limit, and is sent nothing', { timeout: 10_000 }, async (t) => {
  const { port } = await server(t, () => {});
  const silent = rawSocket(t, port);
  await silent.closed;
  assert.equal(silent.received(), '');
});

test('a request whose body stops arriving is closed by the idle limit', { timeout: 10_000 }, async (t) => {
  let handled = 0;
  const { port } = await server(t, (app) => {
    app.post('/body', async () => {
      handled++;
      return {};
    });
  });
  const stalled = rawSocket(t, port);
  stalled.socket.write('POST /body HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"a":');
  await stalled.closed;
  assert.equal(stalled.received(), '');
  assert.equal(handled, 0);
});

test('an answer the client does not read is closed by the idle limit', { timeout: 10_000 }, async (t) => {
  let answered: (socket: Socket) => void = () => {};
  const answering = new Promise<Socket>((resolve) => {
    answered = resolve;
  });
  const { port } = await server(t, (app) => {
    app.get('/big', async (request, reply) => {
      answered(request.raw.socket);
      // Far more than the socket buffers on both sides hold.
      return reply.type('application/octet-stream').send(Buffer.alloc(64 * 1024 * 1024));
    });
  });
  const reader = rawSocket(t, port);
  reader.socket.pause();
  reader.socket.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n');
  const serverSide = await answering;
  await once(serverSide, 'close');
  assert.ok(serverSide.destroyed);
});
