import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers.js';
import { arrivalOrderServer, arrivalOrderServers, inArrivalOrder } from './arrival-order.js';

/**
 * A stand-in for the event loop: `defer` queues a callback for the next check phase, `turn` runs
 * the callbacks queued before it began (what is deferred meanwhile waits for the next turn, as
 * with setImmediate), and the clock moves only when an answer says it took time.
 */
function loop() {
  let clock = 0;
  let deferred: Array<() => void> = [];
  return {
    now: () => clock,
    defer: (callback: () => void) => {
      deferred.push(callback);
    },
    spend: (ms: number) => {
      clock += ms;
    },
    turn: () => {
      const due = deferred;
      deferred = [];
      for (const callback of due) callback();
    },
    get pending() {
      return deferred.length;
    },
  };
}

/** A queue on `l` with a 1 ms slice whose every answer records its request and takes `costMs`. */
function answering<T>(l: ReturnType<typeof loop>, costMs: number) {
  const answered: T[] = [];
  const arrive = inArrivalOrder(
    (request: T) => {
      answered.push(request);
      l.spend(costMs);
    },
    { sliceMs: 1, now: l.now, defer: l.defer },
  );
  return { arrive, answered };
}

test('requests are answered in the order they were read, a slice of time per turn', () => {
  const l = loop();
  // Each answer takes 0.6 ms: a 1 ms slice holds two of them.
  const { arrive, answered } = answering<string>(l, 0.6);
  arrive('a');
  arrive('b');
  arrive('c');
  arrive('d');
  l.turn();
  assert.deepEqual(answered, ['a', 'b'], 'the turn stops once its slice is used');

  // The loop polls between turns: what it reads now joins behind the requests already waiting.
  arrive('e');
  l.turn();
  assert.deepEqual(answered, ['a', 'b', 'c', 'd']);
  l.turn();
  assert.deepEqual(answered, ['a', 'b', 'c', 'd', 'e']);
  l.turn();
  assert.equal(l.pending, 0, 'nothing is left scheduled once the queue is empty');
});

test('a turn answers at least one request, however long each takes', () => {
  const l = loop();
  const { arrive, answered } = answering<number>(l, 5);
  for (let n = 0; n < 3; n++) arrive(n);
  for (let turn = 1; turn <= 3; turn++) {
    l.turn();
    assert.deepEqual(answered, [0, 1, 2].slice(0, turn));
  }
});

test('cheap requests share a turn: all that were waiting are answered in it', () => {
  const l = loop();
  const { arrive, answered } = answering<number>(l, 0.01);
  for (let n = 0; n < 32; n++) arrive(n);
  l.turn();
  assert.equal(answered.length, 32);
  assert.deepEqual(
    answered,
    [...answered].sort((x, y) => x - y),
  );
});

test('the server Fastify is given keeps its timeouts and answers pipelined requests in order', async (t) => {
  const server = arrivalOrderServer(
    (request, response) => {
      response.end(request.url);
    },
    { http: { requireHostHeader: false }, keepAliveTimeout: 4321, requestTimeout: 6543, connectionTimeout: 7654 },
  );
  assert.equal(server.keepAliveTimeout, 4321);
  assert.equal(server.requestTimeout, 6543);
  assert.equal(server.timeout, 7654);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());

  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  let received = '';
  socket.setEncoding('utf8');
  const all = new Promise<void>((resolve) => {
    socket.on('data', (chunk: string) => {
      received += chunk;
      if (received.includes('/third')) resolve();
    });
  });
  // Three requests in one write, no Host header (the option Fastify passed is applied).
  socket.write(['/first', '/second', '/third'].map((path) => `GET ${path} HTTP/1.1\r\n\r\n`).join(''));
  await all;
  socket.destroy();
  const bodies = received
    .split('\r\n\r\n')
    .slice(1)
    .map((part) => part.split('HTTP/1.1')[0]);
  assert.deepEqual(bodies, ['/first', '/second', '/third']);
});

test('the app answers in arrival order, with its configured timeouts', async (t) => {
  const { app } = await buildTestApp(t, {
    config: { http: { idleTimeoutMs: 11_000, keepAliveTimeoutMs: 12_000, requestTimeoutMs: 13_000 } },
  });
  assert.ok(arrivalOrderServers.has(app.server));
  assert.equal(app.server.timeout, 11_000);
  assert.equal(app.server.keepAliveTimeout, 12_000);
  assert.equal(app.server.requestTimeout, 13_000);
});
