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
  assert.deepEqual(json(body).errors, [{ field: 'page_notify', message: 'must match format "email", or be ""' }]);
});

test('JSON bodies: a syntax error, an empty body, bytes that are not UTF-8 and a __proto__ key are 400s that say which; another charset is 415; a DELETE needs none', async (t) => {
  const { app, site } = await buildTestApp(t);
  const post = (contentType: string, payload: string | Buffer) =>
    app.inject({ method: 'POST', url: '/api/page', headers: { ...site.headers, 'content-type': contentType }, payload });
  const cases: Array<[string, string | Buffer, number, RegExp]> = [
    ['application/json', '{"page_usertitle":', 400, /^The body is not valid JSON: /],
    ['application/json', '', 400, /^The body is empty/],
    ['application/json', '{"__proto__":{"page_usertitle":"x"}}', 400, /"__proto__"/],
    ['application/json', '{"constructor":{"prototype":{"x":1}}}', 400, /"constructor.prototype"/],
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
  // A DELETE takes no body; clients that send Content-Type: application/json with every request still delete.
  const id = json(await post('application/json', '{"page_usertitle":"gone"}')).data[0].page;
  const deleted = await app.inject({
    method: 'DELETE',
    url: `/api/page/${id}`,
    headers: { ...site.headers, 'content-type': 'application/json' },
  });
  assert.equal(deleted.statusCode, 204, deleted.body);
});
