import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json } from '../../test/helpers.js';

test('integers in paths and query strings are digits only: 0x3, 3e0, +3, 3.0 and " 3" are 400, and DELETE /api/page/1.0 deletes nothing', async (t) => {
  const { app, site } = await buildTestApp(t);
  const created = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'Three' } });
  const id = json(created).data[0].page as number;
  for (const written of [`0x${id}`, `${id}e0`, `+${id}`, `${id}.0`, `%20${id}`]) {
    for (const [method, url] of [
      ['GET', `/api/page/${written}`],
      ['DELETE', `/api/page/${written}`],
      ['GET', `/api/page?id=${written}`],
      ['GET', `/api/blog?offset=${written}`],
    ] as const) {
      const response = await app.inject({ method, url, headers: site.headers });
      assert.equal(response.statusCode, 400, `${method} ${url}`);
      assert.equal(json(response).type, '/problems/validation-failed');
      assert.match(json(response).detail, /must be a whole number, written in digits/);
    }
  }
  assert.equal((await app.inject({ url: `/api/page/${id}`, headers: site.headers })).statusCode, 200, 'still there');
  assert.equal((await app.inject({ url: `/api/page?offset=0&id=${id}`, headers: site.headers })).statusCode, 200, 'digits are fine');
});

test('a query parameter given twice is named as such, not as a type error of each branch of its schema', async (t) => {
  const { app, site } = await buildTestApp(t);
  for (const query of ['pageSize=2&pageSize=3', 'id=1&id=3', 'offset=1&offset=2', 'matchType=like&matchType=exact']) {
    const response = await app.inject({ url: `/api/page?${query}`, headers: site.headers });
    assert.equal(response.statusCode, 400, query);
    const name = query.split('=')[0];
    assert.deepEqual(json(response).errors, [{ field: name, message: 'is given more than once; send it once' }], query);
  }
});

test('a value outside a set of literals is refused with the allowed values named', async (t) => {
  const { app, site } = await buildTestApp(t);
  const query = await app.inject({ url: '/api/page?publicContentOnly=yes&matchType=EXACT', headers: site.headers });
  assert.deepEqual(json(query).errors, [
    { field: 'matchType', message: 'must be one of: "like", "exact", "contains", "startsWith", "endsWith"' },
    { field: 'publicContentOnly', message: 'must be one of: "true", "1", "false", "0"' },
  ]);
  const body = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_notify: 'a@b' } });
  assert.deepEqual(json(body).errors, [{ field: 'page_notify', message: 'must be an e-mail address, or empty' }]);
});

test('JSON bodies: a syntax error, an empty body, bytes that are not UTF-8 and a __proto__ key are 400s that say which; another charset is 415; a DELETE with a body is a 400', async (t) => {
  const { app, site } = await buildTestApp(t);
  const post = (contentType: string, payload: string | Buffer) =>
    app.inject({ method: 'POST', url: '/api/page', headers: { ...site.headers, 'content-type': contentType }, payload });
  const cases: Array<[string, string | Buffer, number, RegExp]> = [
    ['application/json', '{"page_usertitle":', 400, /^The body is not valid JSON: /],
    ['application/json', '', 400, /^The body is empty/],
    ['application/json', '{"__proto__":{"page_usertitle":"x"}}', 400, /"__proto__".*: rename or remove it\.$/],
    ['application/json', '{"constructor":{"prototype":{"x":1}}}', 400, /"constructor.prototype".*: rename or remove it\.$/],
    ['application/json; charset=iso-8859-1', Buffer.from('{"page_usertitle":"caf\xe9"}', 'latin1'), 415, /UTF-8.*iso-8859-1/],
    ['application/json', Buffer.from('{"page_usertitle":"caf\xe9"}', 'latin1'), 400, /not valid UTF-8/],
  ];
  for (const [contentType, payload, status, detail] of cases) {
    const response = await post(contentType, payload);
    assert.equal(response.statusCode, status, `${contentType} ${payload}`);
    assert.match(json(response).detail, detail);
  }
  assert.equal(json(await app.inject({ url: '/api/page', headers: site.headers })).meta.total, 0, 'nothing was stored');
  for (const contentType of ['application/json; charset=UTF-8', 'application/json;charset="utf8"']) {
    const response = await post(contentType, '{"page_usertitle":"café"}');
    assert.equal(response.statusCode, 201, contentType);
    assert.equal(json(response).data[0].page_usertitle, 'café');
  }
  // A DELETE takes no body: one with a body is a 400 that says so, whatever its type, and deletes nothing.
  const id = json(await post('application/json', '{"page_usertitle":"gone"}')).data[0].page;
  for (const [contentType, payload, url] of [
    ['application/json', '{"page":1}', `/api/page/${id}`],
    ['text/json', '{"page":1}', `/api/page/${id}`],
    ['text/plain', 'delete it', `/api/page/${id}`],
    ['application/x-www-form-urlencoded', `apiID=${site.apiId}&apiKey=${site.apiKey}`, `/webapps/api/page/${id}`],
  ]) {
    const refused = await app.inject({ method: 'DELETE', url, headers: { ...site.headers, 'content-type': contentType }, payload });
    assert.equal(refused.statusCode, 400, `${contentType}: ${refused.body}`);
    assert.match(json(refused).detail, /^A DELETE takes no body: .*Send it without a body\.$/);
  }
  assert.equal((await app.inject({ url: `/api/page/${id}`, headers: site.headers })).statusCode, 200, 'nothing was deleted');
  // Clients that send Content-Type: application/json with every request, and no body, still delete.
  const deleted = await app.inject({
    method: 'DELETE',
    url: `/api/page/${id}`,
    headers: { ...site.headers, 'content-type': 'application/json' },
  });
  assert.equal(deleted.statusCode, 204, deleted.body);
});

test('validator messages are written in words: patterns, formats, types and ranges', async (t) => {
  const { app, site } = await buildTestApp(t);
  const post = async (payload: object) =>
    json(await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'x', ...payload } }))
      .errors;
  assert.deepEqual(await post({ page_alttemplate: 'Z' }), [
    { field: 'page_alttemplate', message: 'must be one letter from A to F, or empty' },
  ]);
  assert.deepEqual(await post({ page_alias: 'a/b' }), [
    { field: 'page_alias', message: 'must hold no slash, question mark, hash or white space' },
  ]);
  assert.deepEqual(await post({ page_thumb_dimensions: 'big' }), [
    { field: 'page_thumb_dimensions', message: 'must be WIDTHxHEIGHT in pixels (such as 300x200), or empty' },
  ]);
  assert.deepEqual(await post({ page_order: 'first' }), [{ field: 'page_order', message: 'must be a whole number' }]);
  assert.deepEqual(await post({ page_usertitle: 5 }), [{ field: 'page_usertitle', message: 'must be text' }]);
  const everything = JSON.stringify([
    await post({ page_alttemplate: 'Z', page_alias: 'a b', page_order: 'x', page_notify: 'nope', page_parent: -1 }),
  ]);
  for (const raw of ['must match', 'must be integer', 'must be string', 'must be >=', 'or be ', '^[']) {
    assert.ok(!everything.includes(raw), `no raw validator wording (${raw}): ${everything}`);
  }
});

test('an id sent both in the path and the query is named as such', async (t) => {
  const { app, site } = await buildTestApp(t);
  const response = await app.inject({ url: '/api/page/2?id=2', headers: site.headers });
  assert.equal(response.statusCode, 400);
  assert.deepEqual(json(response).errors, [{ field: 'id', message: 'is already in the path: send the id once, in the path' }]);
  const other = await app.inject({ url: '/api/page/2?colour=red', headers: site.headers });
  assert.deepEqual(json(other).errors, [{ field: 'colour', message: 'is not a known query parameter' }]);
});

test('an anonymous 401 is small, unless Accept names application/json, which keeps the endpoint’s reference', async (t) => {
  const { app } = await buildTestApp(t);
  for (const accept of [undefined, '*/*', 'text/html,application/xhtml+xml,*/*;q=0.8', 'application/*', 'application/json;q=0']) {
    const response = await app.inject({ url: '/api/page', headers: accept ? { accept } : {} });
    assert.equal(response.statusCode, 401);
    assert.ok(response.body.length < 2048, `Accept ${accept}: ${response.body.length} bytes`);
    assert.equal(json(response).reference, undefined);
  }
  const asked = await app.inject({ url: '/api/page', headers: { accept: 'application/json' } });
  assert.equal(asked.statusCode, 401);
  assert.equal(json(asked).reference.endpoint, '/api/page');
  const markdown = await app.inject({ url: '/api/page', headers: { accept: 'text/markdown' } });
  assert.equal(markdown.statusCode, 200, 'the Markdown reference needs no credentials');
  assert.match(markdown.body, /^# /m);
});
