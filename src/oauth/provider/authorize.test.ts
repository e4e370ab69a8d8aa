import assert from 'node:assert/strict';
import { test } from 'node:test';
import { authorizeCode, authorizeUrl, type OAuthTestApp, pkcePair, REDIRECT_URI, startOAuthApp } from '../../../test/oauth.helpers.js';

async function get(url: string) {
  return fetch(url, { redirect: 'manual', headers: { accept: 'text/html' } });
}

/** The authorization URL with some parameters replaced (undefined removes one). */
async function urlWith(a: OAuthTestApp, changes: Record<string, string | undefined>): Promise<string> {
  const { challenge } = await pkcePair();
  const url = new URL(authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge, state: 'st&te=1 ü' }));
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) url.searchParams.delete(name);
    else url.searchParams.set(name, value);
  }
  return url.href;
}

/** An error sent back to the client: to the registered URI, with error, the state unchanged, and iss (RFC 9207). */
async function redirectedError(a: OAuthTestApp, url: string): Promise<string> {
  return String((await redirectedErrorParams(a, url)).get('error'));
}

async function redirectedErrorParams(a: OAuthTestApp, url: string): Promise<URLSearchParams> {
  const response = await get(url);
  assert.equal(response.status, 303, `${url} → ${response.status}`);
  const location = new URL(String(response.headers.get('location')));
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
  // Implicit and hybrid response types answer in the fragment, as their clients would expect.
  const params = location.hash ? new URLSearchParams(location.hash.slice(1)) : location.searchParams;
  assert.equal(params.get('state'), 'st&te=1 ü');
  assert.equal(params.get('iss'), a.issuer);
  assert.equal(params.get('code'), null);
  return params;
}

test('an unknown client or a redirect URI that is not an exact match gets an error page, never a redirect', async (t) => {
  const a = await startOAuthApp(t);
  const variants = [
    { client_id: 'unknown-client' },
    { client_id: undefined },
    { redirect_uri: undefined },
    { redirect_uri: `${REDIRECT_URI}/` },
    { redirect_uri: 'https://app.example/Callback' },
    { redirect_uri: 'https://APP.EXAMPLE/callback' },
    { redirect_uri: 'http://app.example/callback' },
    { redirect_uri: `${REDIRECT_URI}?extra=1` },
    { redirect_uri: `${REDIRECT_URI}#fragment` },
    { redirect_uri: 'https://user@app.example/callback' },
    { redirect_uri: 'https://app.example:443/callback' },
    { redirect_uri: 'https://evil.example/callback' },
    { redirect_uri: 'https://app.example.evil.example/callback' },
  ];
  for (const change of variants) {
    const response = await get(await urlWith(a, change));
    assert.equal(response.status, 400, JSON.stringify(change));
    assert.equal(response.headers.get('location'), null, JSON.stringify(change));
    assert.match(String(response.headers.get('content-type')), /^text\/html/);
    assert.match(String(response.headers.get('content-security-policy')), /frame-ancestors 'none'/);
    assert.equal(response.headers.get('referrer-policy'), 'no-referrer');
    const html = await response.text();
    assert.match(html, /This request cannot continue/);
  }
});

test('PKCE is S256 only and required', async (t) => {
  const a = await startOAuthApp(t);
  assert.equal(await redirectedError(a, await urlWith(a, { code_challenge_method: 'plain' })), 'invalid_request');
  assert.equal(await redirectedError(a, await urlWith(a, { code_challenge_method: undefined })), 'invalid_request');
  assert.equal(await redirectedError(a, await urlWith(a, { code_challenge: undefined })), 'invalid_request');
  assert.equal(await redirectedError(a, await urlWith(a, { code_challenge: 'too-short' })), 'invalid_request');
});

test('resource is required and must be the API base URL exactly', async (t) => {
  const a = await startOAuthApp(t);
  for (const resource of [undefined, `${a.base}/`, `${a.base}/api`, 'https://other.example', 'not a url', `${a.base}#x`]) {
    assert.equal(await redirectedError(a, await urlWith(a, { resource })), 'invalid_target', String(resource));
  }
});

test('one resource per authorization: a repeated resource is invalid_request before any sign-in, saying so', async (t) => {
  const a = await startOAuthApp(t);
  for (const second of [`${a.base}/mcp`, a.base]) {
    const url = new URL(await urlWith(a, {}));
    url.searchParams.append('resource', second);
    const params = await redirectedErrorParams(a, url.href);
    assert.equal(params.get('error'), 'invalid_request', second);
    assert.match(String(params.get('error_description')), /resource.*once.*one resource/, second);
  }
});

test('response_type is code only; scopes must be known and present; parameters may not repeat', async (t) => {
  const a = await startOAuthApp(t);
  for (const response_type of ['token', 'code id_token', 'id_token', 'none']) {
    assert.equal(await redirectedError(a, await urlWith(a, { response_type })), 'unsupported_response_type', response_type);
  }
  for (const scope of [undefined, '', 'everything:admin', 'openid', 'everything:read product:admin']) {
    assert.equal(await redirectedError(a, await urlWith(a, { scope })), 'invalid_scope', String(scope));
  }
  const repeated = `${await urlWith(a, {})}&scope=product:read`;
  assert.equal(await redirectedError(a, repeated), 'invalid_request');
});

test('the successful redirect carries code, the state unchanged, and iss', async (t) => {
  const a = await startOAuthApp(t);
  const state = 'a b&c=d/é';
  const { callback } = await authorizeCode(a, { state });
  assert.equal(`${callback.origin}${callback.pathname}`, REDIRECT_URI);
  assert.equal(callback.searchParams.get('state'), state);
  assert.equal(callback.searchParams.get('iss'), a.issuer);
  assert.match(String(callback.searchParams.get('code')), /^[\w-]{43,}$/);
});
