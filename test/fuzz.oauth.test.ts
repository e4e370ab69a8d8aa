/**
 * Fuzzing of the OAuth endpoints (issue 9; the rest of the API is in fuzz.test.ts). Each request
 * starts as a valid one (a full authorization request, a code or refresh grant, a revocation, a
 * client registration) and is then damaged: parameters dropped, repeated, replaced by near misses
 * or hostile text. What "a clear error" means here is docs/errors.md#oauth-endpoints: token,
 * revocation and registration answer RFC 6749 JSON errors, the authorization endpoint an HTML
 * page or a redirect to the client, and an address no endpoint serves a 404 problem.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { createClient } from '../src/oauth/clients/client.service.js';
import { damageCount, damagedObject, garbageBody, hostileJson, hostileString, hostileValue } from './fuzz.arbitraries.js';
import { answered, assertAnswer, assertOAuthAnswer, fuzz } from './fuzz.checks.js';
import { buildTestApp } from './helpers.js';

const REDIRECT_URI = 'https://app.example/callback';
const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
const KNOWN_PATHS = ['authorize', 'token', 'revoke', 'reg', 'jwks', 'interaction/x', 'authorize/x'];

type Pairs = Array<[string, string]>;

/** A valid parameter list, damaged: a parameter dropped, replaced (by a near miss or hostile text), repeated, or an unknown one added. */
function damagedParams(valid: Record<string, string>, nearMisses: Record<string, readonly string[]>): fc.Arbitrary<Pairs> {
  const names = Object.keys(nearMisses);
  const name = fc.constantFrom(...names);
  const valueFor = (n: string) =>
    fc.oneof({ arbitrary: fc.constantFrom(...nearMisses[n]!), weight: 3 }, { arbitrary: hostileValue, weight: 1 });
  const mutation = fc.oneof(
    name.map((n) => ({ kind: 'drop' as const, name: n, value: '' })),
    name.chain((n) => valueFor(n).map((value) => ({ kind: 'set' as const, name: n, value }))),
    name.chain((n) => valueFor(n).map((value) => ({ kind: 'repeat' as const, name: n, value }))),
    fc.tuple(hostileString, hostileString).map(([n, value]) => ({ kind: 'repeat' as const, name: n, value })),
  );
  return damageCount
    .chain((n) => fc.array(mutation, { minLength: n, maxLength: n }))
    .map((mutations) => {
      let pairs: Pairs = Object.entries(valid);
      for (const m of mutations) {
        if (m.kind !== 'repeat') pairs = pairs.filter(([n]) => n !== m.name);
        if (m.kind !== 'drop') pairs.push([m.name, m.value]);
      }
      return pairs;
    });
}

/** As a form or query string; now and then with a broken percent-encoding appended. */
const encoded = (pairs: fc.Arbitrary<Pairs>) =>
  fc
    .tuple(pairs, fc.option(fc.constantFrom('%', '%zz', '&%E2%82=1', '&=&&'), { freq: 8 }))
    .map(([p, tail]) => `${new URLSearchParams(p).toString()}${tail ?? ''}`);

const headerText = hostileString.map((s) => s.replace(/[^\x20-\x7e]/g, ''));

test('OAuth: /api/auth/token, /revoke, /reg and /authorize answer RFC 6749 errors, never a 5xx', async (t) => {
  // Thousands of requests a minute: the token limit (RATE_LIMIT_TOKEN) would answer most with 429.
  const { app, config, db } = await buildTestApp(t, { config: { rateLimits: { api: 600, token: 0 } } });
  const resource = config.publicUrl;
  const { clientId } = await createClient(db.kysely, { name: 'Fuzz app', redirectUris: [REDIRECT_URI] });
  const token43 = 'x'.repeat(43);
  const near = {
    client_id: [clientId, 'cl_unknown', '', clientId.toUpperCase()],
    grant_type: ['authorization_code', 'refresh_token', 'client_credentials', 'password', 'urn:ietf:params:oauth:grant-type:device_code'],
    code: [token43, ''],
    code_verifier: [VERIFIER, 'short', ''],
    redirect_uri: [REDIRECT_URI, `${REDIRECT_URI}/`, 'https://evil.example/cb', 'javascript:alert(1)'],
    refresh_token: [token43, ''],
    resource: [resource, `${resource}/`, 'https://other.example', 'urn:x', ''],
    scope: ['everything:read', 'everything:write', 'openid', 'everything:read everything:write', 'product:read', ''],
    token: [token43, ''],
    token_type_hint: ['access_token', 'refresh_token', 'id_token'],
    response_type: ['code', 'token', 'id_token', 'code id_token', 'none'],
    response_mode: ['query', 'fragment', 'form_post', 'jwt', 'web_message'],
    code_challenge: [CHALLENGE, 'short'],
    code_challenge_method: ['S256', 'plain', 'x'],
    state: ['s', ''],
    prompt: ['none', 'login', 'consent', 'select_account', 'create'],
    request: ['eyJhbGciOiJub25lIn0.e30.'],
    request_uri: ['urn:ietf:params:oauth:request_uri:x'],
    max_age: ['0', '-1', 'x'],
    claims: ['{"userinfo":{}}', '{', 'null'],
  };
  const authorize = damagedParams(
    {
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
      scope: 'everything:read',
      resource,
      state: 's',
    },
    near,
  );
  const grant = fc.oneof(
    damagedParams(
      {
        grant_type: 'authorization_code',
        client_id: clientId,
        code: token43,
        code_verifier: VERIFIER,
        redirect_uri: REDIRECT_URI,
        resource,
      },
      near,
    ),
    damagedParams({ grant_type: 'refresh_token', client_id: clientId, refresh_token: token43 }, near),
  );
  const revoke = damagedParams({ token: token43, client_id: clientId, token_type_hint: 'refresh_token' }, near);
  const metadata = fc.record(
    {
      redirect_uris: fc.array(
        fc.constantFrom('https://agent.example/cb', 'http://127.0.0.1:4000/cb', 'com.example.app:/cb', 'http://x.example/cb'),
        { minLength: 1, maxLength: 3 },
      ),
      client_name: fc.string({ unit: 'grapheme', maxLength: 30 }),
      grant_types: fc.subarray(['authorization_code', 'refresh_token']),
      response_types: fc.constant(['code']),
      token_endpoint_auth_method: fc.constantFrom('none', 'client_secret_basic'),
      application_type: fc.constantFrom('web', 'native'),
      logo_uri: fc.webUrl(),
      scope: fc.constantFrom(...near.scope),
    },
    { requiredKeys: ['redirect_uris'] },
  );
  const registration = fc.oneof(
    {
      arbitrary: damagedObject(metadata, [
        'redirect_uris',
        'client_name',
        'grant_types',
        'jwks',
        'token_endpoint_auth_method',
        'software_statement',
      ]),
      weight: 5,
    },
    { arbitrary: hostileJson, weight: 1 },
    { arbitrary: garbageBody.map((g) => g.payload.toString('latin1')), weight: 1 },
  );
  const formType = fc.oneof(
    { arbitrary: fc.constant('application/x-www-form-urlencoded'), weight: 8 },
    {
      arbitrary: fc.constantFrom(
        'application/json',
        'text/plain',
        'multipart/form-data',
        'application/x-www-form-urlencoded; charset=latin1',
      ),
      weight: 1,
    },
  );
  const request = fc.oneof(
    fc.record({ method: fc.constant('GET'), path: fc.constant('authorize'), body: encoded(authorize), type: fc.constant('') }),
    fc.record({ method: fc.constant('POST'), path: fc.constant('token'), body: encoded(grant), type: formType }),
    fc.record({ method: fc.constant('POST'), path: fc.constant('revoke'), body: encoded(revoke), type: formType }),
    fc.record({
      method: fc.constant('POST'),
      path: fc.constant('reg'),
      body: registration,
      type: fc.constantFrom('application/json', 'application/json', 'application/x-www-form-urlencoded'),
    }),
    // Methods and addresses no endpoint serves.
    fc.record({
      method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
      path: fc.oneof(fc.constantFrom(...KNOWN_PATHS), fc.webSegment()),
      body: encoded(revoke),
      type: formType,
    }),
  );
  const client = fc.record({
    // Registrations are limited per address: a fresh one per case keeps the limit from answering them all.
    ip: fc.ipV4(),
    authorization: fc.option(
      fc.oneof(
        headerText,
        headerText.map((s) => `Basic ${Buffer.from(s).toString('base64')}`),
      ),
      { freq: 6 },
    ),
  });
  await fuzz(t, 15, fc.tuple(request, client), async ([r, c]) => {
    const get = r.method === 'GET';
    const headers: Record<string, string> = get ? {} : { 'content-type': r.type };
    if (c.authorization !== null) headers.authorization = c.authorization;
    const response = await answered(
      app.inject({
        method: r.method as 'GET',
        url: `/api/auth/${r.path}${get ? `?${r.body}` : ''}`,
        headers,
        payload: get ? undefined : r.body,
        remoteAddress: c.ip,
      }),
      r.path,
    );
    const what = `${r.method} /api/auth/${r.path} ${r.type} ${r.body.slice(0, 300)}`;
    const label = `${r.method} ${KNOWN_PATHS.includes(r.path) ? r.path : '*'}`;
    if (response.statusCode === 404) return `${label} ${assertAnswer(response, what)}`;
    if (r.path === 'authorize' && get) return `${label} ${assertAuthorizeAnswer(response, what)}`;
    if (['token', 'revoke', 'reg'].includes(r.path) && r.method === 'POST') return `${label} ${assertOAuthAnswer(response, what)}`;
    assert.ok(response.statusCode < 500, `${what}: ${response.statusCode} ${response.body.slice(0, 300)}`);
    return `other ${response.statusCode}`;
  });
});

/**
 * The authorization endpoint runs in a browser (docs/errors.md#oauth-endpoints): an error it
 * cannot send back to the client is an HTML page (400); any other goes to the registered redirect
 * URI with `error` and `iss`; a valid request goes on to the login interaction.
 */
function assertAuthorizeAnswer(response: LightMyRequestResponse, what: string): number {
  const status = response.statusCode;
  assert.ok(status < 400 || status === 400, `${what}: ${status} ${response.body.slice(0, 500)}`);
  if (status === 400) assert.match(String(response.headers['content-type']), /^text\/html/, `${what}: 400 is not the HTML error page`);
  if (status >= 300 && status < 400) {
    const location = String(response.headers.location);
    const toClient = location.startsWith(REDIRECT_URI) && /[?#&]error=/.test(location) && /[?#&]iss=/.test(location);
    assert.ok(toClient || location.startsWith('/api/auth/interaction/'), `${what}: redirected to ${location}`);
  }
  return status;
}
