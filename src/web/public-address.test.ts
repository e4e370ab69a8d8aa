import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers.js';

test('/try and /docs opened at another loopback name than PUBLIC_URL go to PUBLIC_URL, path and query kept', async (t) => {
  const { app, config } = await buildTestApp(t, { config: { publicUrl: 'http://localhost:8080' } });
  assert.equal(config.publicUrl, 'http://localhost:8080');
  for (const [host, url] of [
    ['127.0.0.1:8080', '/try'],
    ['127.0.0.1:8080', '/try?code=abc&state=xyz'],
    ['[::1]:8080', '/docs'],
    ['127.0.0.1:8080', '/docs/'],
  ] as const) {
    const response = await app.inject({ url, headers: { host } });
    assert.equal(response.statusCode, 302, `${host}${url}`);
    assert.equal(response.headers.location, `http://localhost:8080${url}`);
  }
  // At PUBLIC_URL itself the pages answer.
  assert.equal((await app.inject({ url: '/try', headers: { host: 'localhost:8080' } })).statusCode, 200);
  const docs = await app.inject({ url: '/docs/', headers: { host: 'localhost:8080' } });
  assert.equal(docs.statusCode, 200);
  assert.equal(docs.headers['x-frame-options'], 'DENY', 'the docs pages keep their own headers');
  // Another port, or a name that is not loopback, is not this address under another name.
  assert.equal((await app.inject({ url: '/try', headers: { host: '127.0.0.1:9090' } })).statusCode, 200);
  assert.equal((await app.inject({ url: '/try', headers: { host: 'cms.example' } })).statusCode, 200);
  // The API is not redirected: a client calls whatever address it was given.
  assert.equal((await app.inject({ url: '/api/openapi.json', headers: { host: '127.0.0.1:8080' } })).statusCode, 200);
});

test('with a PUBLIC_URL that is not loopback nothing is redirected: behind a proxy that passes its own Host it would loop', async (t) => {
  const { app } = await buildTestApp(t, { config: { publicUrl: 'https://cms.example' } });
  for (const host of ['127.0.0.1:8080', 'localhost:8080', 'internal:8080']) {
    assert.equal((await app.inject({ url: '/try', headers: { host } })).statusCode, 200, host);
  }
});
