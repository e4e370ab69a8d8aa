import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { Type } from 'typebox';
import { buildTestApp, json } from '../../test/helpers.js';
import { requireDeclaredAccess } from '../auth/authenticate.js';

test('a route under /api that declares neither a scope nor public: true fails to register', async () => {
  for (const url of ['/api/forgotten', '/webapps/api/forgotten', '/api']) {
    const app = Fastify();
    requireDeclaredAccess(app);
    assert.throws(() => app.get(url, async () => ({})), /declares neither config\.scope nor config\.public/, url);
    await app.close();
  }
  const app = Fastify();
  requireDeclaredAccess(app);
  app.get('/api/open', { config: { public: true } }, async () => ({}));
  app.get('/api/guarded', { config: { scope: 'everything:read' } }, async () => ({}));
  app.get('/apiary', async () => ({}));
  app.get('/healthz', async () => ({}));
  await app.ready();
  await app.close();
});

test('unknown query parameters are a 400 naming them on every content endpoint', async (t) => {
  const { app, site } = await buildTestApp(t);
  const page = json(await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'P' } }))
    .data[0];
  const blog = json(
    await app.inject({ method: 'POST', url: '/api/blog', headers: site.headers, payload: { page: page.page, info_title: 'B' } }),
  ).data[0];
  const calls = [
    { method: 'GET', url: '/api/page' },
    { method: 'GET', url: `/api/page/${page.page}` },
    { method: 'POST', url: '/api/page', payload: { page_usertitle: 'Q' } },
    { method: 'DELETE', url: `/api/page/${page.page}` },
    { method: 'GET', url: '/api/blog' },
    { method: 'GET', url: `/api/blog/${blog.info_id}` },
    { method: 'POST', url: '/api/blog', payload: { page: page.page, info_title: 'C' } },
    { method: 'DELETE', url: `/api/blog/${blog.info_id}` },
  ] as const;
  for (const prefix of ['', '/webapps']) {
    for (const call of calls) {
      const response = await app.inject({ ...call, url: `${prefix}${call.url}?colour=red`, headers: site.headers });
      const label = `${call.method} ${prefix}${call.url}`;
      assert.equal(response.statusCode, 400, label);
      assert.match(String(response.headers['content-type']), /^application\/problem\+json/, label);
      assert.deepEqual(json(response).errors, [{ field: 'colour', message: 'is not a known query parameter' }], label);
    }
  }
  const listed = await app.inject({ url: '/api/page', headers: site.headers });
  assert.equal(json(listed).meta.total, 1, 'the refused POST wrote nothing and the refused DELETE removed nothing');
});

test('the test helper holds answers to their declared response schema', async (t) => {
  const { app } = await buildTestApp(t);
  const Shape = Type.Object({ a: Type.String() }, { additionalProperties: false });
  app.get(
    '/api/contract-probe',
    { schema: { summary: 'probe', response: { 200: Shape } }, config: { public: true } },
    // Pre-serialized, as the content routes send: the extra field reaches the client unchecked.
    async (request, reply) => reply.type('application/json').send(request.url.endsWith('?extra') ? '{"a":"x","b":1}' : '{"a":"x"}'),
  );
  assert.equal((await app.inject({ url: '/api/contract-probe' })).statusCode, 200);
  await assert.rejects(app.inject({ url: '/api/contract-probe?extra' }), /outside its declared schema/);
});
