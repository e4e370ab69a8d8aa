import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json } from '../../test/helpers.js';
import { webhookReceiver } from '../../test/webhook-receiver.js';
import { testConfig } from '../config.js';

const webhooks = (overrides: object = {}) => ({
  webhooks: { ...testConfig().webhooks, allowPrivateTargets: true, pollMs: 20, ...overrides },
});

test('a hook is created with its secret shown once, listed, read, changed and deleted, within its website only', async (t) => {
  const { app, site, addSite } = await buildTestApp(t, { config: webhooks() });
  const receiver = await webhookReceiver(t);
  const created = await app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: site.headers,
    payload: { url: receiver.url, events: ['page.created', 'blog.deleted'], description: 'sync' },
  });
  assert.equal(created.statusCode, 201, created.body);
  const hook = json(created).data[0];
  assert.match(hook.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  assert.deepEqual(
    { url: hook.url, events: hook.events, status: hook.status, description: hook.description },
    { url: receiver.url, events: ['page.created', 'blog.deleted'], status: 'active', description: 'sync' },
  );
  assert.equal(created.headers.location, `/api/webhooks/${hook.id}`);

  const listed = json(await app.inject({ url: '/api/webhooks', headers: site.headers })).data;
  assert.equal(listed.length, 1);
  assert.equal(listed[0].secret, undefined, 'the secret is not shown again');
  const one = json(await app.inject({ url: `/api/webhooks/${hook.id}`, headers: site.headers })).data[0];
  assert.equal(one.secret, undefined);

  const patched = await app.inject({
    method: 'PATCH',
    url: `/api/webhooks/${hook.id}`,
    headers: site.headers,
    payload: { events: ['*'], status: 'disabled' },
  });
  assert.equal(patched.statusCode, 200, patched.body);
  assert.deepEqual(json(patched).data[0].events, ['*']);
  assert.equal(json(patched).data[0].status, 'disabled');
  assert.equal(json(patched).data[0].disabledReason, 'owner');

  const other = await addSite('Other');
  for (const [method, url] of [
    ['GET', `/api/webhooks/${hook.id}`],
    ['PATCH', `/api/webhooks/${hook.id}`],
    ['DELETE', `/api/webhooks/${hook.id}`],
    ['POST', `/api/webhooks/${hook.id}/rotate-secret`],
    ['GET', `/api/webhooks/${hook.id}/deliveries`],
    ['POST', `/api/webhooks/${hook.id}/test`],
    ['POST', `/api/webhooks/${hook.id}/deliveries/1/retry`],
  ] as const) {
    const response = await app.inject({ method, url, headers: other.headers, ...(method === 'PATCH' ? { payload: {} } : {}) });
    assert.equal(response.statusCode, 404, `${method} ${url} from another website`);
    assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
    assert.equal(json(response).detail, `There is no webhook ${hook.id} on this website.`);
  }
  assert.deepEqual(json(await app.inject({ url: '/api/webhooks', headers: other.headers })).data, []);

  const deleted = await app.inject({ method: 'DELETE', url: `/api/webhooks/${hook.id}`, headers: site.headers });
  assert.equal(deleted.statusCode, 204);
  assert.equal((await app.inject({ url: `/api/webhooks/${hook.id}`, headers: site.headers })).statusCode, 404);
});

test('PATCH and DELETE of a hook honour If-Match with the ETag of its GET; a stale one is a 412 and changes nothing', async (t) => {
  const { app, site } = await buildTestApp(t, { config: webhooks() });
  const receiver = await webhookReceiver(t);
  const created = await app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: site.headers,
    payload: { url: receiver.url, events: ['page.created'] },
  });
  const url = `/api/webhooks/${json(created).data[0].id}`;
  const read = await app.inject({ url, headers: site.headers });
  const etag = String(read.headers.etag);
  assert.match(etag, /^"[\w-]+"$/);
  const again = await app.inject({ url, headers: { ...site.headers, 'if-none-match': etag } });
  assert.equal(again.statusCode, 304);

  const first = await app.inject({ method: 'PATCH', url, headers: { ...site.headers, 'if-match': etag }, payload: { description: 'one' } });
  assert.equal(first.statusCode, 200, first.body);
  const changed = String(first.headers.etag);
  assert.notEqual(changed, etag);
  assert.equal((await app.inject({ url, headers: site.headers })).headers.etag, changed, 'the PATCH answer carries the new ETag');

  for (const [method, payload] of [
    ['PATCH', { description: 'two' }],
    ['DELETE', undefined],
  ] as const) {
    for (const ifMatch of [etag, `W/${changed}`]) {
      const stale = await app.inject({ method, url, headers: { ...site.headers, 'if-match': ifMatch }, ...(payload ? { payload } : {}) });
      assert.equal(stale.statusCode, 412, `${method} If-Match: ${ifMatch}`);
      assert.equal(json(stale).type, '/problems/precondition-failed');
    }
  }
  const kept = await app.inject({ url, headers: site.headers });
  assert.equal(json(kept).data[0].description, 'one', 'nothing was written');
  const deleted = await app.inject({ method: 'DELETE', url, headers: { ...site.headers, 'if-match': changed } });
  assert.equal(deleted.statusCode, 204);
  assert.equal((await app.inject({ url, headers: site.headers })).statusCode, 404);
});

test('an unknown event is a 400 that names the known ones; a bad URL is a 400 naming url', async (t) => {
  const { app, site } = await buildTestApp(t, { config: webhooks() });
  const unknown = await app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: site.headers,
    payload: { url: 'http://127.0.0.1:9/x', events: ['page.created', 'page.published'] },
  });
  assert.equal(unknown.statusCode, 400);
  const [error] = json(unknown).errors;
  assert.equal(error.field, 'events');
  assert.match(error.message, /page\.published is not an event/);
  for (const event of ['page.created', 'page.updated', 'page.deleted', 'page.restored', 'blog.created', 'blog.restored', '*']) {
    assert.ok(error.message.includes(event), `names ${event}`);
  }
  for (const url of ['not a url', 'ftp://127.0.0.1/x', 'file:///etc/passwd']) {
    const response = await app.inject({ method: 'POST', url: '/api/webhooks', headers: site.headers, payload: { url, events: ['*'] } });
    assert.equal(response.statusCode, 400, url);
    assert.equal(json(response).errors[0].field, 'url', url);
  }
  const relative = await app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: site.headers,
    payload: { url: '/hooks', events: ['*'] },
  });
  assert.deepEqual(json(relative).errors, [{ field: 'url', message: 'must be an absolute URL, such as https://example.com/hooks/cms' }]);
});

test('a website has at most 50 hooks: the 51st is a 409 that says to delete one first', async (t) => {
  const { app, site } = await buildTestApp(t, { config: webhooks() });
  const create = () =>
    app.inject({ method: 'POST', url: '/api/webhooks', headers: site.headers, payload: { url: 'http://127.0.0.1:9/x', events: ['*'] } });
  for (let i = 0; i < 50; i++) assert.equal((await create()).statusCode, 201);
  const refused = await create();
  assert.equal(refused.statusCode, 409);
  assert.equal(json(refused).detail, 'This website has 50 webhooks, the most it may have: delete one before adding another.');
});

test('managing hooks needs the write scope and credentials', async (t) => {
  const { app } = await buildTestApp(t, { config: webhooks() });
  assert.equal((await app.inject({ url: '/api/webhooks' })).statusCode, 401);
});

test('the OpenAPI document lists every webhook endpoint', async (t) => {
  const { app } = await buildTestApp(t, { config: webhooks() });
  const document = json(await app.inject({ url: '/api/openapi.json' }));
  const paths = Object.keys(document.paths).filter((p) => p.startsWith('/api/webhooks'));
  assert.deepEqual(paths.sort(), [
    '/api/webhooks',
    '/api/webhooks/{id}',
    '/api/webhooks/{id}/deliveries',
    '/api/webhooks/{id}/deliveries/{delivery}/retry',
    '/api/webhooks/{id}/rotate-secret',
    '/api/webhooks/{id}/test',
  ]);
  assert.deepEqual(Object.keys(document.paths['/api/webhooks/{id}']).sort(), ['delete', 'get', 'patch']);
});
