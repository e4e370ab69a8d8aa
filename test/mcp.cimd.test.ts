import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:https';
import { type TestContext, test } from 'node:test';
import { DOCUMENT_FETCHES_PER_MINUTE, metadataDocumentFetch } from '../src/oauth/clients/client-metadata.js';
import { listConnections } from '../src/oauth/connections/connection.service.js';
import { AGENT_REDIRECT, AgentAuth, connectAgent } from './mcp.helpers.js';
import { authorizeUrl, type OAuthTestApp, pkcePair, startOAuthApp } from './oauth.helpers.js';
import { testCertificates as certificates } from './test-ca.js';

/** The agent's web site over HTTPS: its metadata document, and some that must be refused. */
async function agentSite(t: TestContext, tls: { key: Buffer; cert: Buffer }) {
  const requests: string[] = [];
  let origin = '';
  const documents: Record<string, (url: string) => unknown> = {
    '/client.json': (url) => ({
      client_id: url,
      client_name: 'CIMD agent',
      redirect_uris: [AGENT_REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }),
    '/other-id.json': () => ({ client_id: `${origin}/client.json`, redirect_uris: [AGENT_REDIRECT] }),
    '/secret.json': (url) => ({ client_id: url, redirect_uris: [AGENT_REDIRECT], token_endpoint_auth_method: 'client_secret_basic' }),
    '/bad-redirect.json': (url) => ({ client_id: url, redirect_uris: ['http://evil.example/callback'] }),
    '/large.json': (url) => ({ client_id: url, redirect_uris: [AGENT_REDIRECT], client_name: 'x'.repeat(6 * 1024) }),
    '/bidi-name.json': (url) => ({ client_id: url, redirect_uris: [AGENT_REDIRECT], client_name: '\u202Egnp.exe\u200B' }),
    '/long-name.json': (url) => ({ client_id: url, redirect_uris: [AGENT_REDIRECT], client_name: 'x'.repeat(101) }),
  };
  const server = createServer(tls, (request, response) => {
    const pathname = String(request.url);
    requests.push(pathname);
    if (pathname === '/slow.json') return; // never answers: the fetch must give up on its own
    const document = documents[pathname];
    if (!document) return response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(document(`${origin}${pathname}`)));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { origin, requests };
}

/** The authorization endpoint's answer to a metadata document client_id: a redirect or the error page. */
async function authorize(a: OAuthTestApp, clientId: string, redirectUri = AGENT_REDIRECT) {
  const { challenge } = await pkcePair();
  const url = authorizeUrl(a.issuer, {
    clientId,
    redirectUri,
    codeChallenge: challenge,
    resource: `${a.base}/mcp`,
    scope: 'everything:read',
  });
  const response = await fetch(url, { redirect: 'manual', headers: { accept: 'text/html' } });
  return { status: response.status, location: response.headers.get('location'), html: await response.text() };
}

const OAUTH = { dynamicRegistration: true, clientMetadataDocuments: true };

test('Client ID Metadata Documents: an MCP client whose client_id is its https document URL connects without registering', async (t) => {
  const tls = certificates(t);
  const site = await agentSite(t, tls);
  const a = await startOAuthApp(t, { config: { oauth: OAUTH }, metadataDocumentFetch: metadataDocumentFetch({ ca: tls.ca }) });
  const metadata = (await (await fetch(`${a.base}/.well-known/oauth-authorization-server/api/auth`)).json()) as Record<string, unknown>;
  assert.equal(metadata.client_id_metadata_document_supported, true);

  const documentUrl = `${site.origin}/client.json`;
  const agent = await connectAgent(a, { site: a.site.siteId }, new AgentAuth(AGENT_REDIRECT, documentUrl));
  t.after(() => agent.client.close());
  assert.equal(agent.authorizationUrl.searchParams.get('client_id'), documentUrl);
  assert.ok(site.requests.includes('/client.json'), 'the document was fetched');
  const listed = await agent.client.callTool({ name: 'list_pages', arguments: {} });
  assert.notEqual(listed.isError, true);
  const dynamic = await a.db.kysely.selectFrom('oauth_clients').select('client_id').where('source', '=', 'dynamic').execute();
  assert.deepEqual(dynamic, [], 'no registration');

  const connections = await listConnections(a.db.kysely, a.site.siteId);
  assert.deepEqual(
    connections.map((c) => [c.client_id, c.client_name, c.status]),
    [[documentUrl, 'CIMD agent', 'active']],
    'the connection is listed like any other',
  );

  // The redirect URI must be one the document lists.
  const elsewhere = await authorize(a, documentUrl, 'http://127.0.0.1:2/elsewhere');
  assert.equal(elsewhere.status, 400);
  assert.equal(elsewhere.location, null);
});

// A document that never comes is refused when the fetch gives up; were there no limit, the request
// would hang, and the test's timeout turns that into a failure. The limit is cut from the guard's
// 5 s so the test does not spend them, and kept wide enough for a busy machine to serve the others.
test('Client ID Metadata Documents: documents that do not describe themselves, carry a secret, break the redirect or name rules, are too large or too slow are refused', {
  timeout: 60_000,
}, async (t) => {
  const tls = certificates(t);
  const site = await agentSite(t, tls);
  const a = await startOAuthApp(t, {
    config: { oauth: OAUTH },
    metadataDocumentFetch: metadataDocumentFetch({ ca: tls.ca, timeoutMs: 2000 }),
  });
  const refused = [
    '/other-id.json',
    '/secret.json',
    '/bad-redirect.json',
    '/bidi-name.json',
    '/long-name.json',
    '/large.json',
    '/missing.json',
  ];
  for (const name of [...refused, '/slow.json']) {
    const answer = await authorize(a, `${site.origin}${name}`);
    assert.equal(answer.status, 400, name);
    assert.equal(answer.location, null, `${name}: never a redirect`);
    assert.match(answer.html, /This request cannot continue/, name);
  }
  const fetched = (name: string) => site.requests.filter((path) => path === name).length;
  for (const name of [...refused, '/slow.json']) assert.equal(fetched(name), 1, `${name}: one request fetches once`);

  // A failure is remembered: asking again within the window fetches nothing, so nothing waits for the host.
  for (const name of [...refused, '/slow.json']) {
    const answer = await authorize(a, `${site.origin}${name}`);
    assert.equal(answer.status, 400, name);
    assert.equal(fetched(name), 1, `${name}: not fetched again`);
  }
  const connections = await listConnections(a.db.kysely, a.site.siteId);
  assert.deepEqual(connections, []);
});

test('Client ID Metadata Documents: one address may make the server fetch a few new documents a minute', async (t) => {
  const tls = certificates(t);
  const site = await agentSite(t, tls);
  const a = await startOAuthApp(t, { config: { oauth: OAUTH }, metadataDocumentFetch: metadataDocumentFetch({ ca: tls.ca }) });
  for (let i = 1; i <= DOCUMENT_FETCHES_PER_MINUTE; i++) {
    const answer = await authorize(a, `${site.origin}/fresh-${i}.json`);
    assert.equal(answer.status, 400);
    assert.match(answer.html, /invalid_client/);
  }
  const over = await authorize(a, `${site.origin}/client.json`);
  assert.equal(over.status, 400);
  assert.equal(over.location, null);
  assert.match(over.html, /temporarily_unavailable/);
  assert.match(over.html, /more than 10 new client_id metadata documents in a minute/);
  assert.equal(site.requests.length, DOCUMENT_FETCHES_PER_MINUTE, 'the eleventh was not fetched');
});

test('Client ID Metadata Documents: loopback and private addresses are refused outside tests, before any request is sent', async (t) => {
  const tls = certificates(t);
  const site = await agentSite(t, tls);
  const a = await startOAuthApp(t, { config: { oauth: OAUTH } });
  const answer = await authorize(a, `${site.origin}/client.json`);
  assert.equal(answer.status, 400);
  assert.deepEqual(site.requests, [], 'nothing was fetched from 127.0.0.1');
  // The same server by other names: a host resolving to loopback, IPv4-mapped IPv6, a decimal IPv4.
  const port = new URL(site.origin).port;
  for (const host of ['localhost', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '2130706433', '[::127.0.0.1]']) {
    const other = await authorize(a, `https://${host}:${port}/client.json`);
    assert.equal(other.status, 400, host);
    assert.match(other.html, /invalid_client/, host);
  }
  assert.deepEqual(site.requests, [], 'nothing was fetched from 127.0.0.1 by any name');

  const off = await startOAuthApp(t, { config: { oauth: { dynamicRegistration: true, clientMetadataDocuments: false } } });
  const metadata = (await (await fetch(`${off.issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
  assert.equal(metadata.client_id_metadata_document_supported, undefined, 'OAUTH_CLIENT_METADATA_DOCUMENTS=false');
});
