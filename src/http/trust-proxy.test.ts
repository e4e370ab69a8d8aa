import assert from 'node:assert/strict';
import { test } from 'node:test';
import { authorizeUrl, pkcePair, signIn, startOAuthApp } from '../../test/oauth.helpers.js';
import { LOGIN_ATTEMPTS } from '../accounts/sign-in.js';
import type { TrustProxy } from '../address-settings.js';
import { loadConfig } from '../config.js';
import { ConfigError } from '../config-error.js';

const trustOf = (value: string | undefined) => loadConfig({ DATA_DIR: 'test-output/data', TRUST_PROXY: value }).trustProxy;

test('TRUST_PROXY: off by default, a hop count, or proxies by address and CIDR; anything else stops the start', () => {
  for (const off of [undefined, '', '0', 'false', 'off']) assert.equal(trustOf(off), false, String(off));
  assert.equal(trustOf('2'), 2);
  assert.deepEqual(trustOf('10.0.0.0/8, 192.168.1.7,::1,fd00::/8,loopback'), ['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8', 'loopback']);
  for (const bad of ['true', '*', '11', '10.0.0.0/33', '::/129', 'nginx', '10.0.0', '10.0.0.0/8/1', '1.2.3.4,']) {
    assert.throws(() => trustOf(bad), ConfigError, bad);
  }
});

/** Wrong passwords for one account, each from a new X-Forwarded-For; the status of each. */
async function forgedAttempts(trustProxy: TrustProxy, count: number, t: Parameters<typeof startOAuthApp>[0]) {
  const a = await startOAuthApp(t, { config: { trustProxy } });
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    statuses.push((await signIn(a, a.owner.email, 'wrong password', { 'x-forwarded-for': `203.0.113.${i + 1}` })).status);
  }
  return statuses;
}

test('by default a forged X-Forwarded-For is not believed: the login limit is reached all the same', async (t) => {
  const statuses = await forgedAttempts(false, LOGIN_ATTEMPTS + 2, t);
  assert.deepEqual(statuses.slice(LOGIN_ATTEMPTS), [429, 429], statuses.join());
});

test('TRUST_PROXY=1 believes the last hop: each address has its own per-address count', async (t) => {
  const statuses = await forgedAttempts(1, LOGIN_ATTEMPTS + 2, t);
  assert.ok(
    statuses.every((s) => s === 400),
    statuses.join(),
  );
});

test('a CIDR list believes only those proxies', async (t) => {
  // The test client's socket is 127.0.0.1: a trusted proxy in the first case only.
  assert.ok((await forgedAttempts(['127.0.0.0/8'], LOGIN_ATTEMPTS + 1, t)).every((s) => s === 400));
  assert.equal((await forgedAttempts(['10.0.0.0/8', '::1'], LOGIN_ATTEMPTS + 1, t)).at(-1), 429);
});

test('protocol and host come only from trusted hops, for the app and the authorization server alike', async (t) => {
  for (const [trustProxy, secure] of [
    [false, false],
    [1, true],
    [['10.0.0.1'], false],
  ] as const) {
    const a = await startOAuthApp(t, { config: { trustProxy } });
    const { challenge } = await pkcePair();
    const response = await a.app.inject({
      url: authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge }).slice(a.base.length),
      headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '198.51.100.9' },
    });
    assert.equal(response.statusCode, 303);
    const cookies = [response.headers['set-cookie']].flat().map(String);
    assert.ok(cookies.length >= 2);
    assert.equal(
      cookies.every((c) => /;\s*secure/i.test(c)),
      secure,
      `${JSON.stringify(trustProxy)}: ${cookies.join('\n')}`,
    );
  }
});
