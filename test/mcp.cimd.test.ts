import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { listConnections } from '../src/oauth/connection.service.js';
import { AGENT_REDIRECT, AgentAuth, connectAgent } from './mcp.helpers.js';
import { authorizeUrl, type OAuthTestApp, pkcePair, startOAuthApp } from './oauth.helpers.js';

/** A certificate authority made for this test, and a certificate it signed for 127.0.0.1. */
function certificates(t: TestContext) {
  const dir = mkdtempSync(path.join(tmpdir(), 'cimd-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
    '-subj',
    '/CN=CIMD test CA',
    '-days',
    '1',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  openssl('req', ...ec, '-keyout', file('site.key'), '-out', file('site.csr'), '-subj', '/CN=127.0.0.1');
  writeFileSync(file('san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    '-in',
    file('site.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('site.crt'),
    '-days',
    '1',
    '-extfile',
    file('san.ext'),
  );
  return { ca: readFileSync(file('ca.crt'), 'utf8'), key: readFileSync(file('site.key')), cert: readFileSync(file('site.crt')) };
}

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
  const a = await startOAuthApp(t, { config: { oauth: { ...OAUTH, clientMetadataFetch: { ca: tls.ca } } } });
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

test('Client ID Metadata Documents: documents that do not describe themselves, carry a secret, break the redirect or name rules, are too large or too slow are refused', async (t) => {
  const tls = certificates(t);
  const site = await agentSite(t, tls);
  const a = await startOAuthApp(t, { config: { oauth: { ...OAUTH, clientMetadataFetch: { ca: tls.ca } } } });
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
    const started = Date.now();
    const answer = await authorize(a, `${site.origin}${name}`);
    assert.equal(answer.status, 400, name);
    assert.equal(answer.location, null, `${name}: never a redirect`);
    assert.match(answer.html, /This request cannot continue/, name);
    if (name === '/slow.json') assert.ok(Date.now() - started < 10_000, 'the fetch has a time limit');
  }
  const connections = await listConnections(a.db.kysely, a.site.siteId);
  assert.deepEqual(connections, []);
});

test('Client ID Metadata Documents: loopback and private addresses are refused outside tests, before any request is sent', async (t) => {
  const tls = certificates(t);
  const site = await agentSite(t, tls);
  const a = await startOAuthApp(t, { config: { oauth: OAUTH } });
  const answer = await authorize(a, `${site.origin}/client.json`);
  assert.equal(answer.status, 400);
  assert.deepEqual(site.requests, [], 'nothing was fetched from 127.0.0.1');
  const { resolvesToPublic } = await import('../src/oauth/client-metadata.js');
  for (const host of ['127.0.0.1', '[::1]', '10.1.2.3', '192.168.0.1', '169.254.169.254', '[::ffff:127.0.0.1]', '[fd00::1]', 'localhost']) {
    assert.equal(await resolvesToPublic(host), false, host);
  }
  assert.equal(await resolvesToPublic('93.184.215.14'), true);

  const off = await startOAuthApp(t, { config: { oauth: { dynamicRegistration: true, clientMetadataDocuments: false } } });
  const metadata = (await (await fetch(`${off.issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
  assert.equal(metadata.client_id_metadata_document_supported, undefined, 'OAUTH_CLIENT_METADATA_DOCUMENTS=false');
});
