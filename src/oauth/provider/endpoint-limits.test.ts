import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { connect, type OAuthTestApp, startOAuthApp } from '../../../test/oauth.helpers.js';

// TRUST_PROXY=1 here, so that each X-Forwarded-For stands for a client address of its own.
const from = (n: number) => ({ 'x-forwarded-for': `198.51.100.${n}` });

async function post(a: OAuthTestApp, endpoint: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${a.issuer}/${endpoint}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', ...headers },
    body,
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text) as Record<string, unknown> };
}

/** A refresh with a token that does not exist: the provider answers 400 invalid_grant. */
const badRefresh = (clientId: string) =>
  new URLSearchParams({ grant_type: 'refresh_token', client_id: clientId, refresh_token: 'nope' }).toString();

/** RateLimit's remaining count for a policy, from the structured list. */
function remaining(headers: Headers, policy: string): number | undefined {
  const match = new RegExp(`"${policy}";r=(\\d+);t=(\\d+)`).exec(headers.get('ratelimit') ?? '');
  return match ? Number(match[1]) : undefined;
}

function assertRefused(response: Awaited<ReturnType<typeof post>>) {
  assert.equal(response.status, 429, JSON.stringify(response.body));
  assert.match(String(response.headers.get('content-type')), /^application\/problem\+json/);
  assert.equal(response.body.type, '/problems/too-many-requests');
  assert.equal(response.body.status, 429);
  assert.equal(response.headers.get('cache-control'), 'no-store');
  const retryAfter = Number(response.headers.get('retry-after'));
  assert.ok(retryAfter > 0 && retryAfter <= 60, String(retryAfter));
}

test('RATE_LIMIT_TOKEN counts each client across addresses, announced on every answer; the provider still reads the form', async (t) => {
  const a = await startOAuthApp(t, { config: { trustProxy: 1, rateLimits: { api: 600, token: 3 } } });
  // A real code exchange: the form the limit read is what the provider gets.
  const { response } = await connect(a);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('ratelimit-policy'), '"token-client";q=3;w=60, "token-ip";q=3;w=60');
  assert.equal(remaining(response.headers, 'token-client'), 2);

  for (const [n, left] of [
    [1, 1],
    [2, 0],
  ] as const) {
    const answer = await post(a, 'token', badRefresh(a.clientId), from(n));
    assert.equal(answer.status, 400);
    assert.equal(answer.body.error, 'invalid_grant', 'the provider answered as usual');
    assert.equal(remaining(answer.headers, 'token-client'), left);
    assert.equal(remaining(answer.headers, 'token-ip'), 2, 'each address is new');
  }
  const refused = await post(a, 'revoke', new URLSearchParams({ client_id: a.clientId, token: 'x' }).toString(), from(3));
  assertRefused(refused);
  assert.equal(remaining(refused.headers, 'token-client'), 0, 'revocation shares the count');
  assert.match(String(refused.body.detail), /client/);

  const otherClient = await post(a, 'token', badRefresh(randomUUID()), from(3));
  assert.notEqual(otherClient.status, 429, 'another client from the same address is not refused');
});

test('RATE_LIMIT_TOKEN counts each address across clients, HTTP Basic client ids included', async (t) => {
  const a = await startOAuthApp(t, { config: { trustProxy: 1, rateLimits: { api: 600, token: 3 } } });
  const client = randomUUID();
  const basic = { authorization: `Basic ${Buffer.from(`${encodeURIComponent(client)}:`).toString('base64')}` };
  const first = await post(a, 'token', 'grant_type=refresh_token&refresh_token=nope', { ...from(9), ...basic });
  assert.notEqual(first.status, 429);
  assert.equal(remaining(first.headers, 'token-client'), 2, 'the Basic user name is the client');
  const second = await post(a, 'token', badRefresh(client), from(9));
  assert.equal(remaining(second.headers, 'token-client'), 1, 'the same client, named in the form');
  assert.equal(remaining(second.headers, 'token-ip'), 1);
  const third = await post(a, 'revoke', new URLSearchParams({ client_id: randomUUID(), token: 'x' }).toString(), from(9));
  assert.equal(remaining(third.headers, 'token-ip'), 0);
  assertRefused(await post(a, 'token', badRefresh(randomUUID()), from(9)));
  assert.notEqual((await post(a, 'token', badRefresh(randomUUID()), from(10))).status, 429, 'another address is not refused');
});

test('bodies the limit cannot read are counted per address and reach the provider unchanged', async (t) => {
  const a = await startOAuthApp(t, { config: { rateLimits: { api: 600, token: 5 } } });
  // Past the provider's 56 KiB: the limit stops reading, the provider still sees every byte and refuses.
  const huge = await post(a, 'token', `${badRefresh(a.clientId)}&pad=${'x'.repeat(60 * 1024)}`);
  assert.equal(huge.status, 400);
  assert.equal(huge.body.error, 'invalid_request');
  assert.equal(huge.headers.get('ratelimit-policy'), '"token-ip";q=5;w=60', 'no client read from an unread body');
  const asJson = await post(a, 'token', JSON.stringify({ client_id: a.clientId }), { 'content-type': 'application/json' });
  assert.equal(asJson.status, 400);
  assert.equal(asJson.body.error, 'invalid_request');
  assert.equal(remaining(asJson.headers, 'token-ip'), 3);
  const fine = await post(a, 'token', `${badRefresh(a.clientId)}&pad=${'x'.repeat(50 * 1024)}`);
  assert.equal(fine.body.error, 'invalid_grant', 'a large form under the provider limit still parses');
});

test('RATE_LIMIT_TOKEN=0 switches the token limit off; the hourly registration count stays', async (t) => {
  const a = await startOAuthApp(t, { config: { rateLimits: { api: 600, token: 0 } } });
  for (let i = 0; i < 6; i++) {
    const answer = await post(a, 'token', badRefresh(a.clientId));
    assert.equal(answer.status, 400);
    assert.equal(answer.headers.get('ratelimit'), null);
    assert.equal(answer.headers.get('ratelimit-policy'), null);
  }
  const registered = await fetch(`${a.issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['https://agent.example/cb'] }),
  });
  assert.equal(registered.status, 201);
  assert.equal(registered.headers.get('ratelimit-policy'), '"registration";q=20;w=3600');
});

test('RATE_LIMIT_TOKEN is read from the environment, 120 by default', async () => {
  const [{ loadConfig }, { ConfigError }] = await Promise.all([import('../../config.js'), import('../../config-error.js')]);
  const env = { DATA_DIR: 'test-output/data' };
  assert.equal(loadConfig(env).rateLimits.token, 120);
  assert.equal(loadConfig({ ...env, RATE_LIMIT_TOKEN: '0' }).rateLimits.token, 0);
  assert.equal(loadConfig({ ...env, RATE_LIMIT_TOKEN: '30' }).rateLimits.token, 30);
  assert.throws(() => loadConfig({ ...env, RATE_LIMIT_TOKEN: 'lots' }), ConfigError);
});
