import assert from 'node:assert/strict';
import { type AddressInfo, createServer } from 'node:net';
import { test } from 'node:test';
import { Browser, formOf, pkcePair, startOAuthApp } from '../../../test/oauth.helpers.js';
import { BadRequestError } from '../../errors.js';
import { CLIENT_NAME_MAX, createClient } from './client.service.js';

async function register(issuer: string, metadata: unknown) {
  const response = await fetch(`${issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(metadata),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

test('RFC 7591: a public client registers, and its name is shown as unverified', async (t) => {
  const a = await startOAuthApp(t);
  const created = await register(a.issuer, { client_name: 'Agent X', redirect_uris: ['https://agent.example/cb'] });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.headers.get('cache-control'), 'no-store');
  assert.match(String(created.body.client_id), /^cl_/);
  assert.equal(typeof created.body.client_id_issued_at, 'number');
  assert.equal(created.body.token_endpoint_auth_method, 'none');
  assert.equal(created.body.client_secret, undefined);
  assert.equal(created.body.registration_access_token, undefined);
  assert.deepEqual(created.body.grant_types, ['authorization_code', 'refresh_token']);

  const { challenge } = await pkcePair();
  const url = new URL(`${a.issuer}/authorize`);
  url.search = new URLSearchParams({
    client_id: String(created.body.client_id),
    redirect_uri: 'https://agent.example/cb',
    response_type: 'code',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    scope: 'everything:read',
    resource: a.base,
  }).toString();
  const step = await new Browser(a.base).follow(url.href);
  assert.equal(step.status, 200);
  assert.equal(formOf(step.html).step, 'login');
  assert.match(step.html, /<strong><bdi class="client-name">Agent X<\/bdi><\/strong><span class="unverified">unverified<\/span>/);
  const stored = await a.db.kysely
    .selectFrom('oauth_clients')
    .selectAll()
    .where('client_id', '=', String(created.body.client_id))
    .executeTakeFirst();
  assert.equal(stored?.source, 'dynamic');
  assert.doesNotMatch(String(stored?.metadata), /secret/, 'no secret is kept');
});

test('RFC 7591: bad redirect URIs and confidential or other grant types are refused', async (t) => {
  const a = await startOAuthApp(t);
  for (const uri of ['http://agent.example/cb', 'https://agent.example/cb#x', 'javascript:alert(1)', 'https://*.example/cb', 'not a uri']) {
    const response = await register(a.issuer, { redirect_uris: [uri] });
    assert.equal(response.status, 400, uri);
    assert.match(String(response.body.error), /^invalid_(redirect_uri|client_metadata)$/, uri);
  }
  assert.equal((await register(a.issuer, { redirect_uris: ['http://127.0.0.1:4000/cb'] })).status, 201, 'loopback http is fine');
  const native = await register(a.issuer, { application_type: 'native', redirect_uris: ['com.example.agent:/cb'] });
  assert.equal(native.status, 201, 'a native app may use a reverse-domain scheme');
  for (const metadata of [
    { redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'client_secret_basic' },
    { redirect_uris: ['https://a.example/cb'], grant_types: ['implicit'], response_types: ['id_token'] },
    { redirect_uris: ['https://a.example/cb'], grant_types: ['client_credentials'] },
    { redirect_uris: [] },
  ]) {
    const response = await register(a.issuer, metadata);
    assert.equal(response.status, 400, JSON.stringify(metadata));
    assert.match(String(response.body.error), /^invalid_(client_metadata|redirect_uri)$/, JSON.stringify(response.body));
  }
});

test('RFC 7591: metadata the server does not use is dropped unread, so a registration cannot make it fetch a URL', async (t) => {
  const a = await startOAuthApp(t);
  // oidc-provider fetched sector_identifier_uri (and would use jwks_uri) while validating: anyone could make the server connect anywhere.
  let connections = 0;
  const listener = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => listener.close(() => resolve())));
  const target = `https://127.0.0.1:${(listener.address() as AddressInfo).port}/x`;
  const created = await register(a.issuer, {
    client_name: 'Agent Y',
    redirect_uris: ['https://agent.example/cb'],
    client_uri: 'https://agent.example/',
    sector_identifier_uri: target,
    jwks_uri: target,
    request_uris: [target],
    post_logout_redirect_uris: ['https://agent.example/bye'],
    subject_type: 'pairwise',
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(connections, 0, 'no connection to the URLs in the metadata');
  assert.deepEqual(Object.keys(created.body).sort(), [
    'application_type',
    'client_id',
    'client_id_issued_at',
    'client_name',
    'client_uri',
    'grant_types',
    'redirect_uris',
    'response_types',
    'token_endpoint_auth_method',
  ]);
});

/** Names that would rewrite or widen the sentence they are shown in. */
const BAD_NAMES = [
  '\u202Egnp.exe\u200B',
  'Agent \u202AX',
  'Agent \u2066X\u2069',
  'Agent\u200E X',
  'Agent\u200F X',
  'Agent\u061C X',
  'Agent\tX',
  'Agent\nX',
  'Agent\u2028X',
  'Agent\uFEFFX',
  'x'.repeat(CLIENT_NAME_MAX + 1),
  'x'.repeat(3000),
];

test('RFC 7591: a client_name with control or bidi formatting characters, or too long, is invalid_client_metadata', async (t) => {
  const a = await startOAuthApp(t);
  for (const client_name of BAD_NAMES) {
    const response = await register(a.issuer, { client_name, redirect_uris: ['https://agent.example/cb'] });
    assert.equal(response.status, 400, JSON.stringify(client_name));
    assert.equal(response.body.error, 'invalid_client_metadata', JSON.stringify(client_name));
    assert.match(String(response.body.error_description), /^client_name: /);
  }
  const stored = await a.db.kysely.selectFrom('oauth_clients').select('name').execute();
  assert.deepEqual(stored, [{ name: 'Test app' }], 'nothing was stored');
  // Persian needs the zero-width non-joiner, emoji sequences the joiner: neither moves text.
  for (const client_name of ['Agent X', 'نرم\u200Cافزار', 'Family \u{1F468}\u200D\u{1F469}\u200D\u{1F467}', 'x'.repeat(CLIENT_NAME_MAX)]) {
    const response = await register(a.issuer, { client_name, redirect_uris: ['https://agent.example/cb'] });
    assert.equal(response.status, 201, JSON.stringify(response.body));
  }
});

test('the CLI and the console (createClient) refuse the same names', async (t) => {
  const a = await startOAuthApp(t);
  for (const name of BAD_NAMES) {
    await assert.rejects(
      createClient(a.db.kysely, { name, redirectUris: ['https://agent.example/cb'] }),
      BadRequestError,
      JSON.stringify(name),
    );
  }
});

test('RFC 7591: registrations are rate limited per address, per minute (RATE_LIMIT_TOKEN) and per hour', async (t) => {
  const a = await startOAuthApp(t, { config: { rateLimits: { api: 600, token: 25 } } });
  const answers = [];
  for (let i = 0; i < 21; i++) answers.push(await register(a.issuer, { redirect_uris: ['https://agent.example/cb'] }));
  assert.deepEqual(
    answers.slice(0, 20).map((r) => r.status),
    Array(20).fill(201),
  );
  assert.equal(answers[0]!.headers.get('ratelimit-policy'), '"token-ip";q=25;w=60, "registration";q=20;w=3600');
  assert.match(String(answers[0]!.headers.get('ratelimit')), /^"token-ip";r=24;t=\d+, "registration";r=19;t=\d+$/);
  const refused = answers[20]!;
  assert.equal(refused.status, 429);
  assert.match(String(refused.headers.get('content-type')), /^application\/problem\+json/);
  assert.equal(refused.body.type, '/problems/too-many-requests');
  const retryAfter = Number(refused.headers.get('retry-after'));
  assert.ok(retryAfter > 60 && retryAfter <= 3600, `the hour's window decides: ${retryAfter}`);
  const clients = await a.db.kysely.selectFrom('oauth_clients').select('client_id').execute();
  assert.equal(clients.length, 21, "the test's own client and 20 registered: the refused one stored nothing");
});

test('dynamic registration can be switched off', async (t) => {
  const a = await startOAuthApp(t, { config: { oauth: { dynamicRegistration: false, clientMetadataDocuments: true } } });
  const response = await register(a.issuer, { redirect_uris: ['https://agent.example/cb'] }).catch(() => ({ status: 404 }));
  assert.equal(response.status, 404);
  const metadata = (await (await fetch(`${a.issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
  assert.equal(metadata.registration_endpoint, undefined);
});
