import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { once } from 'node:events';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { type TestContext, test } from 'node:test';
import { testCertificates } from '../../test/test-ca.js';
import { OutboundError, type OutboundOptions, outboundFetch } from './outbound.js';
import { isPublicAddress } from './public-address.js';

test('isPublicAddress: global unicast only, whatever the textual form', () => {
  const allowed = [
    '93.184.215.14',
    '8.8.8.8',
    '1.1.1.1',
    '100.63.255.255', // just below shared address space
    '100.128.0.0', // just above it
    '172.15.255.255',
    '172.32.0.0',
    '192.0.1.1',
    '198.17.255.255',
    '198.20.0.1',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '[2606:4700:4700::1111]',
    '2001:4860:4860::8888', // 2001:4860:: is outside 2001::/23
    '2001:200::1', // first address after 2001::/23
    '::ffff:93.184.215.14', // IPv4-mapped: judged as its IPv4 address
    '::ffff:5db8:d70e',
    '3fff:1000::1', // after 3fff::/20
  ];
  const refused = [
    // IPv4 special-purpose ranges
    '0.0.0.0',
    '0.1.2.3',
    '10.0.0.1',
    '100.64.0.1',
    '100.127.255.255',
    '127.0.0.1',
    '127.255.255.254',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.0.0.8',
    '192.0.2.1',
    '192.31.196.1',
    '192.52.193.1',
    '192.88.99.1',
    '192.168.1.1',
    '192.175.48.1',
    '198.18.0.1',
    '198.19.255.255',
    '198.51.100.1',
    '203.0.113.1',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    // IPv6
    '::',
    '::1',
    '[::1]',
    '0:0:0:0:0:0:0:1',
    '::7f00:1', // IPv4-compatible, compressed
    '::127.0.0.1', // IPv4-compatible, dotted
    '::5db8:d70e', // IPv4-compatible, even of a public IPv4 address
    '::ffff:127.0.0.1', // IPv4-mapped loopback
    '::ffff:7f00:1',
    '0:0:0:0:0:ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '::ffff:0:127.0.0.1', // IPv4-translated
    '::ffff:0:5db8:d70e',
    '64:ff9b::7f00:1', // NAT64
    '64:ff9b::93.184.215.14',
    '64:ff9b:1::1',
    '100::1', // discard
    '2001::1', // Teredo
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '2001:2::1', // benchmarking
    '2001:10::1', // ORCHID
    '2001:1ff:ffff::1', // last of 2001::/23
    '2001:db8::1',
    '2001:0db8:0000:0000:0000:0000:0000:0001',
    '2002:7f00:1::1', // 6to4
    '2002:5db8:d70e::1',
    '2620:4f:8000::1',
    '3fff::1',
    '3fff:fff::1',
    '5f00::1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'fec0::1', // site-local
    'feff::1',
    'ff02::1',
    'ff0e::1',
    '4000::1', // outside 2000::/3
    '1fff::1',
    // not an address
    'localhost',
    '127.1',
    '2130706433',
    '0x7f.0.0.1',
    '',
    '[127.0.0.1]',
  ];
  for (const address of allowed) assert.equal(isPublicAddress(address), true, address);
  for (const address of refused) assert.equal(isPublicAddress(address), false, address);
});

const PUBLIC = '93.184.215.14';

/**
 * An HTTPS server on 127.0.0.1 with a certificate for agent.test, standing in for a public host:
 * the guard resolves agent.test through `answers` (one list per lookup, the last repeated), and
 * the test's connectTo sends a socket for PUBLIC to the server. Nothing else is ever reached.
 */
async function publicHost(t: TestContext, answers: ReadonlyArray<readonly LookupAddress[]>, options: Partial<OutboundOptions> = {}) {
  const tls = testCertificates(t, ['DNS:agent.test', 'IP:127.0.0.1']);
  const requests: string[] = [];
  let connections = 0;
  const server = createHttpsServer(tls, (request, response) => {
    const path = String(request.url);
    requests.push(path);
    if (path === '/doc') return response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    if (path === '/redirect') return response.writeHead(302, { location: '/doc' }).end();
    if (path === '/exact') return response.writeHead(200).end('x'.repeat(5120));
    if (path === '/big') return response.writeHead(200).end('x'.repeat(10_000));
    if (path === '/big-chunked') {
      response.writeHead(200);
      for (let i = 0; i < 10; i++) response.write('x'.repeat(1000));
      return response.end();
    }
    if (path === '/stall') return response.writeHead(200).write('{'); // the body never ends
    if (path === '/silent') return; // never answers
    response.writeHead(404).end();
  });
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const port = (server.address() as { port: number }).port;
  const lookups: string[] = [];
  const connectedTo: string[] = [];
  const fetch = outboundFetch({
    maxBytes: 5120,
    resolve: async (hostname) => {
      lookups.push(hostname);
      return answers[Math.min(lookups.length, answers.length) - 1] ?? [];
    },
    testHooks: {
      ca: tls.ca,
      connectTo: (checked) => {
        connectedTo.push(checked.address);
        return checked.address === PUBLIC ? { address: '127.0.0.1', family: 4 } : checked;
      },
    },
    ...options,
  });
  return { fetch, port, origin: `https://agent.test:${port}`, requests, lookups, connectedTo, connections: () => connections };
}

const v4 = (address: string): LookupAddress => ({ address, family: 4 });

test('outbound: the host is resolved once and the socket goes to the address that was checked; a rebinding answer is refused', async (t) => {
  const host = await publicHost(t, [[v4(PUBLIC)], [v4('127.0.0.1')]]);
  const response = await host.fetch(`${host.origin}/doc`);
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { ok: true });
  assert.deepEqual(host.lookups, ['agent.test'], 'one resolution for the request');
  assert.deepEqual(host.connectedTo, [PUBLIC], 'the socket was handed the checked address');
  assert.deepEqual(host.requests, ['/doc']);

  // The next lookup answers loopback: refused before any connection.
  await assert.rejects(host.fetch(`${host.origin}/doc`), (error: Error) => {
    assert.ok(error instanceof OutboundError);
    assert.match(error.message, /resolves to 127\.0\.0\.1, which is not a public address/);
    return true;
  });
  assert.equal(host.lookups.length, 2);
  assert.deepEqual(host.connectedTo, [PUBLIC]);
  assert.equal(host.connections(), 1);
});

test('outbound: one non-public answer among public ones refuses the request', async (t) => {
  for (const bad of [v4('127.0.0.1'), v4('10.0.0.1'), { address: '::ffff:7f00:1', family: 6 }, { address: 'fec0::1', family: 6 }]) {
    const host = await publicHost(t, [[v4(PUBLIC), bad]]);
    await assert.rejects(host.fetch(`${host.origin}/doc`), OutboundError, bad.address);
    assert.deepEqual(host.connectedTo, [], bad.address);
    assert.equal(host.connections(), 0, bad.address);
  }
  const empty = await publicHost(t, [[]]);
  await assert.rejects(empty.fetch(`${empty.origin}/doc`), /has no address/);
  const failing = outboundFetch({
    maxBytes: 100,
    resolve: async () => {
      throw new Error('ENOTFOUND');
    },
  });
  await assert.rejects(failing('https://agent.test/doc'), /could not be resolved/);
});

test('outbound: an IP literal is judged as it is written, without DNS, in any form', async (t) => {
  const host = await publicHost(t, [[v4(PUBLIC)]]);
  for (const literal of [
    '127.0.0.1',
    '[::1]',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '[::7f00:1]',
    '[::127.0.0.1]',
    '2130706433',
    '0x7f.1',
    '[fec0::1]',
  ]) {
    await assert.rejects(host.fetch(`https://${literal}:${host.port}/doc`), /not a public address/, literal);
  }
  assert.deepEqual(host.lookups, [], 'no resolution for a literal');
  assert.equal(host.connections(), 0);
  await assert.rejects(host.fetch(`http://agent.test:${host.port}/doc`), /only https/);

  // Loopback only with the test hook, which configuration from the environment cannot set.
  const tls = testCertificates(t);
  const server = createHttpsServer(tls, (_request, response) => response.end('ok'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const url = `https://127.0.0.1:${(server.address() as { port: number }).port}/`;
  await assert.rejects(outboundFetch({ maxBytes: 100, testHooks: { ca: tls.ca } })(url), /not a public address/);
  assert.equal(await (await outboundFetch({ maxBytes: 100, testHooks: { ca: tls.ca, loopback: true } })(url)).text(), 'ok');
});

test('outbound: a redirect is a failure and is not followed', async (t) => {
  const host = await publicHost(t, [[v4(PUBLIC)]]);
  await assert.rejects(host.fetch(`${host.origin}/redirect`), /answered 302: redirects are not followed/);
  assert.deepEqual(host.requests, ['/redirect']);
  assert.equal((await host.fetch(`${host.origin}/missing`)).status, 404, 'other statuses are the caller to judge');
});

test('outbound: the answer is bounded in size, with or without Content-Length', async (t) => {
  const host = await publicHost(t, [[v4(PUBLIC)]]);
  assert.equal((await (await host.fetch(`${host.origin}/exact`)).text()).length, 5120);
  await assert.rejects(host.fetch(`${host.origin}/big`), /larger than 5120 bytes/);
  await assert.rejects(host.fetch(`${host.origin}/big-chunked`), /larger than 5120 bytes/);
});

// Each fetch below ends in the failure its own limit gives (the message names which); were a limit
// not kept, the fetch would hang, and the test's timeout turns that into a failure.
const HANG_MS = 60_000;

test('outbound: the answer is bounded in time, to connect and in all, and by the caller signal', { timeout: HANG_MS }, async (t) => {
  const host = await publicHost(t, [[v4(PUBLIC)]], { timeoutMs: 300 });
  for (const path of ['/silent', '/stall']) {
    await assert.rejects(host.fetch(`${host.origin}${path}`), /no complete answer from agent\.test within 300 ms/, path);
  }
  await assert.rejects(host.fetch(`${host.origin}/silent`, { signal: AbortSignal.timeout(100) }), /^OutboundError: aborted$/);

  // A server that accepts the connection and never speaks TLS.
  const mute = createTcpServer(() => {});
  mute.listen(0, '127.0.0.1');
  await once(mute, 'listening');
  t.after(() => mute.close());
  const sockets: Socket[] = [];
  mute.on('connection', (socket) => sockets.push(socket));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
  });
  const fetch = outboundFetch({
    maxBytes: 100,
    connectTimeoutMs: 200,
    resolve: async () => [v4(PUBLIC)],
    testHooks: { connectTo: () => v4('127.0.0.1') },
  });
  await assert.rejects(
    fetch(`https://agent.test:${(mute.address() as { port: number }).port}/`),
    /no connection to agent\.test within 200 ms/,
  );
});
