import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { test } from 'node:test';
import { revokeCredential } from '../src/accounts/account.service.js';
import { packageFileAbove } from '../src/reference/package-version.js';
import { buildTestApp, json } from './helpers.js';

test('requests without or with wrong credentials get 401 problem+json with a challenge', async (t) => {
  const { app, site } = await buildTestApp(t);
  const wrongKey = `Basic ${Buffer.from(`${site.apiId}:sk_wrong`).toString('base64')}`;
  const cases: Array<Record<string, string>> = [
    {},
    { authorization: wrongKey },
    { authorization: 'Basic bm9jb2xvbg==' },
    { 'x-api-id': site.apiId },
    { 'x-api-id': site.apiId, 'x-api-key': 'nope' },
    { 'x-api-id': 'ak_unknown', 'x-api-key': site.apiKey },
    { authorization: 'Bearer not-a-token' },
  ];
  for (const headers of cases) {
    for (const [method, url] of [
      ['GET', '/api/page'],
      ['POST', '/webapps/api/page'],
      ['DELETE', '/api/page/1'],
    ] as const) {
      const response = await app.inject({ method, url, headers, ...(method === 'POST' ? { payload: {} } : {}) });
      assert.equal(response.statusCode, 401, `${method} ${url} ${JSON.stringify(headers)}`);
      assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
      assert.match(
        String(response.headers['www-authenticate']),
        /Bearer realm="content-api".*resource_metadata="http:\/\/localhost:8080\/\.well-known\/oauth-protected-resource"/,
      );
      assert.match(String(response.headers['www-authenticate']), /Basic realm/);
    }
  }
  const bearer = await app.inject({ url: '/api/page', headers: { authorization: 'Bearer nope' } });
  assert.match(String(bearer.headers['www-authenticate']), /error="invalid_token"/);
  // Each detail says what to do next, not only what was wrong.
  assert.match(json(bearer).detail, /Get a new one with your refresh token at \/api\/auth\/token, or by authorizing again/);
  const noColon = await app.inject({ url: '/api/page', headers: { authorization: 'Basic bm9jb2xvbg==' } });
  assert.match(json(noColon).detail, /joined by a colon, API_ID:API_KEY, base64-encoded \(curl -u API_ID:API_KEY/);
  const wrong = await app.inject({ url: '/api/page', headers: { authorization: wrongKey } });
  assert.match(json(wrong).detail, /do not match an active credential: check .*create a new credential/);
  assert.ok(!wrong.body.includes('sk_wrong'), 'the detail never quotes the key');
});

test('API credentials work as HTTP Basic and as X-Api-Id/X-Api-Key, and stop at revocation', async (t) => {
  const { app, site, db } = await buildTestApp(t);
  assert.equal((await app.inject({ url: '/api/page', headers: site.headers })).statusCode, 200);
  const headers = { 'x-api-id': site.apiId, 'x-api-key': site.apiKey };
  assert.equal((await app.inject({ url: '/api/page', headers })).statusCode, 200);
  await revokeCredential(db.kysely, site.apiId);
  assert.equal((await app.inject({ url: '/api/page', headers })).statusCode, 401);
  assert.equal((await app.inject({ url: '/api/page', headers: site.headers })).statusCode, 401);
});

test('GET answers with a strong ETag and If-None-Match gives 304', async (t) => {
  const { app, site } = await buildTestApp(t);
  const created = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'Tagged' } });
  const id = json(created).data[0].page;
  for (const url of [`/api/page/${id}`, '/api/page', `/api/page?id=${id}`]) {
    const first = await app.inject({ url, headers: site.headers });
    const etag = String(first.headers.etag);
    assert.match(etag, /^"[\w-]+"$/, `${url} has a strong ETag`);
    const again = await app.inject({ url, headers: { ...site.headers, 'if-none-match': etag } });
    assert.equal(again.statusCode, 304, url);
    assert.equal(again.body, '');
    const weakForm = await app.inject({ url, headers: { ...site.headers, 'if-none-match': `"x", W/${etag}` } });
    assert.equal(weakForm.statusCode, 304, 'If-None-Match compares weakly');
    const other = await app.inject({ url, headers: { ...site.headers, 'if-none-match': '"something-else"' } });
    assert.equal(other.statusCode, 200);
  }
  const before = String((await app.inject({ url: `/api/page/${id}`, headers: site.headers })).headers.etag);
  await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { id, page_summary: 'changed' } });
  const after = await app.inject({ url: `/api/page/${id}`, headers: { ...site.headers, 'if-none-match': before } });
  assert.equal(after.statusCode, 200, 'a change makes a new ETag');
  assert.notEqual(after.headers.etag, before);
});

test('POST with id and DELETE honour If-Match; a stale value is 412 and changes nothing', async (t) => {
  const { app, site } = await buildTestApp(t);
  const created = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'V1' } });
  const id = json(created).data[0].page;
  const read = await app.inject({ url: `/api/page/${id}`, headers: site.headers });
  const etag = String(read.headers.etag);
  assert.equal(created.headers.etag, etag, 'the POST answer carries the same ETag as a GET');

  const ok = await app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...site.headers, 'if-match': etag },
    payload: { id, page_usertitle: 'V2' },
  });
  assert.equal(ok.statusCode, 200);
  const stale = await app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...site.headers, 'if-match': etag },
    payload: { id, page_usertitle: 'V3' },
  });
  assert.equal(stale.statusCode, 412);
  assert.equal(stale.headers['content-type'], 'application/problem+json; charset=utf-8');
  const weak = await app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...site.headers, 'if-match': `W/${ok.headers.etag}` },
    payload: { id, page_usertitle: 'V3' },
  });
  assert.equal(weak.statusCode, 412, 'If-Match uses the strong comparison');
  const current = json(await app.inject({ url: `/api/page/${id}`, headers: site.headers })).data[0];
  assert.equal(current.page_usertitle, 'V2');

  const star = await app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...site.headers, 'if-match': '*' },
    payload: { id, page_usertitle: 'V4' },
  });
  assert.equal(star.statusCode, 200);
  const staleDelete = await app.inject({
    method: 'DELETE',
    url: `/api/page/${id}`,
    headers: { ...site.headers, 'if-match': String(ok.headers.etag) },
  });
  assert.equal(staleDelete.statusCode, 412);
  assert.equal((await app.inject({ url: `/api/page/${id}`, headers: site.headers })).statusCode, 200);
  const freshDelete = await app.inject({
    method: 'DELETE',
    url: `/api/page/${id}`,
    headers: { ...site.headers, 'if-match': String(star.headers.etag) },
  });
  assert.equal(freshDelete.statusCode, 204);
});

test('If-Match on an insert is 412 and inserts nothing: the client meant to update a record', async (t) => {
  const { app, site } = await buildTestApp(t);
  const page = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'Parent' } });
  const pageId = json(page).data[0].page;
  for (const ifMatch of ['*', String(page.headers.etag)]) {
    for (const [url, payload] of [
      ['/api/page', { page_usertitle: 'Meant as an update' }],
      ['/api/blog', { page: pageId, info_title: 'Meant as an update' }],
    ] as const) {
      const response = await app.inject({ method: 'POST', url, headers: { ...site.headers, 'if-match': ifMatch }, payload });
      assert.equal(response.statusCode, 412, `${url} If-Match: ${ifMatch}`);
      assert.match(json(response).detail, /no id/);
    }
  }
  assert.equal(json(await app.inject({ url: '/api/page', headers: site.headers })).meta.total, 1);
  assert.equal(json(await app.inject({ url: '/api/blog', headers: site.headers })).meta.total, 0);
});

test('If-None-Match on a write is evaluated: * or the current ETag is a 412 and writes nothing; on an insert, * holds', async (t) => {
  const { app, site } = await buildTestApp(t);
  const created = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'Kept' } });
  const id = json(created).data[0].page;
  const etag = String(created.headers.etag);
  const blog = await app.inject({ method: 'POST', url: '/api/blog', headers: site.headers, payload: { page: id, info_title: 'Kept' } });
  const blogId = json(blog).data[0].info_id;
  for (const ifNoneMatch of ['*', etag, `"other", W/${etag}`]) {
    const headers = { ...site.headers, 'if-none-match': ifNoneMatch };
    for (const [method, url, payload] of [
      ['PATCH', `/api/page/${id}`, { page_usertitle: 'Changed' }],
      ['POST', '/api/page', { id, page_usertitle: 'Changed' }],
      ['DELETE', `/api/page/${id}`, undefined],
    ] as const) {
      const refused = await app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
      assert.equal(refused.statusCode, 412, `${method} ${url} If-None-Match: ${ifNoneMatch}`);
      assert.equal(json(refused).type, '/problems/precondition-failed');
      assert.match(json(refused).detail, /nothing was written\. To .*, send the request without If-None-Match\.$/);
    }
    const blogHeaders = ifNoneMatch === '*' ? headers : { ...site.headers, 'if-none-match': String(blog.headers.etag) };
    const blogRefused = await app.inject({ method: 'DELETE', url: `/api/blog/${blogId}`, headers: blogHeaders });
    assert.equal(blogRefused.statusCode, 412, `DELETE blog If-None-Match: ${ifNoneMatch}`);
  }
  const current = await app.inject({ url: `/api/page/${id}`, headers: site.headers });
  assert.equal(current.headers.etag, etag, 'nothing was written');

  const elsewhere = await app.inject({
    method: 'PATCH',
    url: `/api/page/${id}`,
    headers: { ...site.headers, 'if-none-match': '"some-other-version"' },
    payload: { page_usertitle: 'Changed' },
  });
  assert.equal(elsewhere.statusCode, 200, 'a tag that is not the current one holds');
  const inserted = await app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...site.headers, 'if-none-match': '*' },
    payload: { page_usertitle: 'New' },
  });
  assert.equal(inserted.statusCode, 201, 'an insert has no current record, so * holds');
});

test('each endpoint answers its reference in Markdown, and in the JSON 401 body', async (t) => {
  const { app } = await buildTestApp(t);
  for (const url of ['/api/page', '/webapps/api/page']) {
    const markdown = await app.inject({ url, headers: { accept: 'text/markdown' } });
    assert.equal(markdown.statusCode, 200, url);
    assert.equal(markdown.headers['content-type'], 'text/markdown; charset=utf-8');
    assert.match(markdown.body, /^# \/api\/page\n/);
    assert.match(markdown.body, /\| pageSize \| integer \\\| string \|/, 'query parameters come from the route schema');
    assert.match(markdown.body, /## POST \/api\/page/);
    assert.match(markdown.body, /\| page_parent \| integer \|/);
  }
  const byId = await app.inject({ url: '/api/page/12', headers: { accept: 'text/markdown' } });
  assert.equal(byId.statusCode, 200);
  assert.match(byId.body, /^# \/api\/page\/:id\n/);
  assert.match(byId.body, /## GET \/api\/page\/:id/);
  assert.match(byId.body, /## DELETE \/api\/page\/:id/);
  const asJson = await app.inject({ url: '/api/page', headers: { accept: 'application/json' } });
  assert.equal(asJson.statusCode, 401);
  const body = json(asJson);
  assert.equal(body.status, 401);
  assert.equal(body.reference.endpoint, '/api/page');
  const get = body.reference.methods.find((m: { method: string; path: string }) => m.method === 'GET' && m.path === '/api/page');
  assert.ok(get.queryParameters.some((p: { name: string }) => p.name === 'publicContentOnly'));
  const post = body.reference.methods.find((m: { method: string }) => m.method === 'POST');
  assert.equal(post.scope, 'pages:write');
  assert.ok(post.bodyFields.some((f: { name: string }) => f.name === 'page_usertitle'));
  const preferJson = await app.inject({ url: '/api/page', headers: { accept: 'application/json, text/markdown;q=0.5' } });
  assert.equal(preferJson.statusCode, 401, 'Markdown only when preferred');
});

test('OpenAPI 3.1 document and the docs page come from the same schemas', async (t) => {
  const { app } = await buildTestApp(t);
  const response = await app.inject({ url: '/api/openapi.json' });
  assert.equal(response.statusCode, 200);
  const doc = json(response);
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.version, JSON.parse(readFileSync(packageFileAbove(import.meta.url), 'utf8')).version);
  assert.ok(doc.paths['/api/page'].get.parameters.some((p: { name: string }) => p.name === 'keywords'));
  assert.ok(doc.paths['/api/page'].post.requestBody);
  assert.deepEqual(doc.paths['/api/page/{id}'].delete.security.slice(0, 2), [
    { oauth2: ['pages:write'] },
    { oauth2: ['everything:write'] },
  ]);
  assert.equal(doc.paths['/webapps/api/page'], undefined, 'the alias is documented once, not twice');
  const docs = await app.inject({ url: '/docs/' });
  assert.equal(docs.statusCode, 200);
  assert.match(docs.body, /<html/i);
});

test('health and readiness', async (t) => {
  const { app, db } = await buildTestApp(t);
  assert.deepEqual(json(await app.inject({ url: '/healthz' })), { status: 'ok' });
  assert.deepEqual(json(await app.inject({ url: '/readyz' })), { status: 'ok', database: 'ok' });
  await db.close();
  assert.equal((await app.inject({ url: '/readyz' })).statusCode, 503);
});

test('unknown routes are 404 problems and every answer carries a request id', async (t) => {
  const { app } = await buildTestApp(t);
  const response = await app.inject({ url: '/api/nothing' });
  assert.equal(response.statusCode, 404);
  assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
  // A newcomer who guessed an address is sent to the list of the real ones.
  assert.equal(json(response).detail, "No route for GET /api/nothing: /api/openapi.json lists the API's addresses and methods.");
  assert.ok(response.headers['x-request-id']);
  const echoed = await app.inject({ url: '/healthz', headers: { 'x-request-id': 'abc-123' } });
  assert.equal(echoed.headers['x-request-id'], 'abc-123');
});

test('a request the HTTP parser refuses, or HTTP/1.1 without Host, gets a problem+json 400, 414 or 431, and the connection closes', async (t) => {
  const { app } = await buildTestApp(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const raw = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end(request));
      let answer = '';
      socket.on('data', (chunk) => {
        answer += chunk;
      });
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
  // The detail says what to send instead: the encoding, a shorter URL, smaller headers.
  const check = (answer: string, status: number, type: string, detail: RegExp) => {
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    assert.match(head, new RegExp(`^HTTP/1.1 ${status} `));
    assert.match(head, /content-type: application\/problem\+json/i);
    assert.match(head, /cache-control: no-store/i);
    assert.equal(JSON.parse(body).type, type);
    assert.match(JSON.parse(body).detail, detail);
  };
  const encoded = /send the URL percent-encoded/;
  check(await raw('GET /api/page?keywords=crème HTTP/1.1\r\nHost: x\r\n\r\n'), 400, '/problems/bad-request', encoded);
  check(await raw('NOT HTTP AT ALL\r\n\r\n'), 400, '/problems/bad-request', encoded);
  check(await raw('GET /api/page HTTP/1.1\r\n\r\n'), 400, '/problems/bad-request', /must have a Host header/);
  check(
    await raw(`GET /api/page HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
    431,
    '/problems/request-header-fields-too-large',
    /16 KiB .*: send fewer or smaller headers/,
  );
  check(
    await raw(`GET /api/page?title=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`),
    414,
    '/problems/uri-too-long',
    /16 KiB .*: shorten the query string/,
  );
});

test('a method a known path does not take is a 405 with Allow; an unknown path stays a 404', async (t) => {
  const { app, site } = await buildTestApp(t);
  const put = await app.inject({ method: 'PUT', url: '/api/page/3', headers: site.headers, payload: {} });
  assert.equal(put.statusCode, 405);
  assert.equal(put.headers['content-type'], 'application/problem+json; charset=utf-8');
  const allowed = String(put.headers.allow).split(', ').sort();
  assert.ok(
    ['DELETE', 'GET', 'HEAD'].every((m) => allowed.includes(m)),
    `Allow: ${put.headers.allow}`,
  );
  assert.ok(!allowed.includes('PUT'));
  assert.match(JSON.parse(put.body).detail, /\/api\/page\/3 does not take PUT/);
  const list = await app.inject({ method: 'DELETE', url: '/webapps/api/blog', headers: site.headers });
  assert.equal(list.statusCode, 405);
  assert.ok(String(list.headers.allow).includes('POST'));
  const unknown = await app.inject({ method: 'PUT', url: '/api/nothing', headers: site.headers });
  assert.equal(unknown.statusCode, 404);
  assert.equal(unknown.headers.allow, undefined);
});

test('an OPTIONS that is not a preflight answers 204 with Allow, on a known path, without credentials', async (t) => {
  const { app } = await buildTestApp(t);
  for (const [url, methods] of [
    ['/api/page/3', ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH']],
    ['/webapps/api/page', ['GET', 'HEAD', 'OPTIONS', 'POST']],
    ['/api/changes', ['GET', 'HEAD', 'OPTIONS']],
  ] as const) {
    const options = await app.inject({ method: 'OPTIONS', url });
    assert.equal(options.statusCode, 204, url);
    assert.deepEqual(String(options.headers.allow).split(', ').sort(), methods, url);
    assert.equal(options.body, '');
    const put = await app.inject({ method: 'PUT', url });
    assert.equal(put.statusCode, 405);
    assert.equal(put.headers.allow, options.headers.allow, `${url}: a 405 names the same methods`);
  }
  const unknown = await app.inject({ method: 'OPTIONS', url: '/api/nothing' });
  assert.equal(unknown.statusCode, 404);
  assert.equal(unknown.headers.allow, undefined);
});
