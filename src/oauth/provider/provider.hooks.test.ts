import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json } from '../../../test/helpers.js';

// Found by the fuzz suite: the provider answered these with Koa's text/plain "Not Found".
test('an address or method under /api/auth that no OAuth endpoint serves is a 404 problem', async (t) => {
  const { app } = await buildTestApp(t);
  for (const [method, url] of [
    ['POST', '/api/auth/authorize'],
    ['GET', '/api/auth/token'],
    ['PUT', '/api/auth/reg'],
    ['DELETE', '/api/auth/revoke?token=x'],
    ['GET', '/api/auth/nothing'],
  ] as const) {
    const response = await app.inject({ method, url, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' });
    assert.equal(response.statusCode, 404, `${method} ${url}`);
    assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8', `${method} ${url}`);
    assert.equal(response.headers['cache-control'], 'no-store');
    const path = url.split('?')[0];
    assert.deepEqual(json(response), {
      type: '/problems/not-found',
      title: 'Not found',
      status: 404,
      detail: `No route for ${method} ${path}: /api/openapi.json lists the API's addresses and methods.`,
      instance: path,
    });
  }
  // The endpoints themselves still answer as before.
  const token = await app.inject({
    method: 'POST',
    url: '/api/auth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: '',
  });
  assert.equal(token.statusCode, 400);
  assert.equal(json(token).error, 'invalid_request');
  const jwks = await app.inject({ url: '/api/auth/jwks' });
  assert.equal(jwks.statusCode, 200);
});
