import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json } from '../../test/helpers.js';

test('RATE_LIMIT_API: each credential has its quota, announced in RateLimit-Policy and RateLimit; beyond it, 429', async (t) => {
  const { app, site, addSite } = await buildTestApp(t, { config: { rateLimits: { api: 3 } } });
  for (const remaining of [2, 1, 0]) {
    const response = await app.inject({ url: '/api/page', headers: site.headers });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['ratelimit-policy'], '"api";q=3;w=60');
    assert.match(String(response.headers.ratelimit), new RegExp(`^"api";r=${remaining};t=\\d+$`));
  }
  const refused = await app.inject({ url: '/webapps/api/page', headers: site.headers });
  assert.equal(refused.statusCode, 429, 'both prefixes share the count');
  assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
  assert.equal(json(refused).type, '/problems/too-many-requests');
  const retryAfter = Number(refused.headers['retry-after']);
  assert.ok(retryAfter > 0 && retryAfter <= 60, String(retryAfter));
  assert.match(String(refused.headers.ratelimit), /^"api";r=0;t=\d+$/);

  const other = await addSite('Other site');
  const unaffected = await app.inject({ url: '/api/page', headers: other.headers });
  assert.equal(unaffected.statusCode, 200, 'another credential has its own count');
  assert.match(String(unaffected.headers.ratelimit), /^"api";r=2;/);
});

test('RATE_LIMIT_API=0 switches the limit off; public routes and refused credentials are never counted', async (t) => {
  const off = await buildTestApp(t, { config: { rateLimits: { api: 0 } } });
  for (let i = 0; i < 5; i++) {
    const response = await off.app.inject({ url: '/api/page', headers: off.site.headers });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers.ratelimit, undefined);
  }
  const on = await buildTestApp(t, { config: { rateLimits: { api: 1 } } });
  for (let i = 0; i < 3; i++) {
    assert.equal((await on.app.inject({ url: '/api/page' })).statusCode, 401);
    assert.equal((await on.app.inject({ url: '/healthz' })).headers.ratelimit, undefined);
  }
  assert.equal((await on.app.inject({ url: '/api/page', headers: on.site.headers })).statusCode, 200);
});

test('RATE_LIMIT_API is read from the environment, 600 by default', async () => {
  const { loadConfig, ConfigError } = await import('../config.js');
  const env = { DATA_DIR: 'test-output/data' };
  assert.equal(loadConfig(env).rateLimits.api, 600);
  assert.equal(loadConfig({ ...env, RATE_LIMIT_API: '0' }).rateLimits.api, 0);
  assert.throws(() => loadConfig({ ...env, RATE_LIMIT_API: '-1' }), ConfigError);
});
