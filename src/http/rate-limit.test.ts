import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { buildTestApp, createTestDatabase, json, testRedis } from '../../test/helpers.js';
import { connect, startOAuthApp } from '../../test/oauth.helpers.js';

test('RATE_LIMIT_API: each credential has its quota, announced in RateLimit-Policy and RateLimit; beyond it, 429', async (t) => {
  const { app, site, addSite } = await buildTestApp(t, { config: { rateLimits: { api: 3, token: 0 } } });
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
  const off = await buildTestApp(t, { config: { rateLimits: { api: 0, token: 0 } } });
  for (let i = 0; i < 5; i++) {
    const response = await off.app.inject({ url: '/api/page', headers: off.site.headers });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers.ratelimit, undefined);
  }
  const on = await buildTestApp(t, { config: { rateLimits: { api: 1, token: 0 } } });
  for (let i = 0; i < 3; i++) {
    assert.equal((await on.app.inject({ url: '/api/page' })).statusCode, 401);
    assert.equal((await on.app.inject({ url: '/healthz' })).headers.ratelimit, undefined);
  }
  assert.equal((await on.app.inject({ url: '/api/page', headers: on.site.headers })).statusCode, 200);
});

test('RATE_LIMIT_API is read from the environment, 600 by default', async () => {
  const [{ loadConfig }, { ConfigError }] = await Promise.all([import('../config.js'), import('../config-error.js')]);
  const env = { DATA_DIR: 'test-output/data' };
  assert.equal(loadConfig(env).rateLimits.api, 600);
  assert.equal(loadConfig({ ...env, RATE_LIMIT_API: '0' }).rateLimits.api, 0);
  assert.throws(() => loadConfig({ ...env, RATE_LIMIT_API: '-1' }), ConfigError);
});

test('an OAuth connection has a count of its own, apart from the API key of the same website', async (t) => {
  const a = await startOAuthApp(t, { config: { rateLimits: { api: 2, token: 0 } } });
  const { tokens } = await connect(a);
  for (let i = 0; i < 2; i++) assert.equal((await a.app.inject({ url: '/api/page', headers: a.site.headers })).statusCode, 200);
  assert.equal((await a.app.inject({ url: '/api/page', headers: a.site.headers })).statusCode, 429, 'the API key is spent');
  const bearer = await a.app.inject({ url: '/api/page', headers: { authorization: `Bearer ${tokens.access_token}` } });
  assert.equal(bearer.statusCode, 200, 'the connection to the same website is not');
  assert.match(String(bearer.headers.ratelimit), /^"api";r=1;/);
});

test('with REDIS_URL, two nodes share one count per credential', async (t) => {
  const redisUrl = await testRedis(t);
  if (!redisUrl) return;
  // A prefix of its own, so that tests running at the same time (SQLite and PostgreSQL) never meet.
  const redisKeyPrefix = `test:${randomUUID()}:`;
  t.after(async () => {
    const redis = new Redis(redisUrl);
    const keys = await redis.keys(`${redisKeyPrefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });
  const db = await createTestDatabase(t);
  const config = { redisUrl, redisKeyPrefix, rateLimits: { api: 3, token: 0 } };
  const [a, b] = [await buildTestApp(t, { db, config }), await buildTestApp(t, { db, config })];
  const headers = a.site.headers;
  const answers = [];
  // A node adds its hits to Redis at most every 100 ms until near the quota (syncedRateLimits):
  // with the clock moved on 150 ms between requests, each answer sees every hit of both nodes.
  // The store's own test covers the bound.
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  for (const node of [a, b, a, b]) {
    if (answers.length) t.mock.timers.tick(150);
    answers.push(await node.app.inject({ url: '/api/page', headers }));
  }
  assert.deepEqual(
    answers.map((r) => r.statusCode),
    [200, 200, 200, 429],
  );
  assert.deepEqual(
    answers.slice(0, 3).map((r) => /r=(\d+)/.exec(String(r.headers.ratelimit))?.[1]),
    ['2', '1', '0'],
  );
  assert.equal(json(answers[3]!).type, '/problems/too-many-requests');
  const other = await b.app.inject({ url: '/api/page', headers: b.site.headers });
  assert.equal(other.statusCode, 200, "the other node's own credential has its own count");

  const stored = new Redis(redisUrl);
  t.after(() => stored.disconnect());
  assert.equal((await stored.keys(`${redisKeyPrefix}rl:*`)).length, 2, 'one counter per credential, in Redis under the prefix');
});
