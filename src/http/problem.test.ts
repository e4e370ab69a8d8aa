import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json } from '../../test/helpers.js';

// Found by the fuzz suite: the router refused these paths with a JSON body of its own, not a problem.
test('a path the router cannot decode is a 400 problem, a path parameter over its length a 414 problem, each with the headers every answer carries', async (t) => {
  const { app, site } = await buildTestApp(t);
  const cases: Array<[string, number, string]> = [
    ['/api/page/%', 400, '/problems/bad-request'],
    ['/webapps/api/blog/%zz?x=1', 400, '/problems/bad-request'],
    ['/images/%E2%82', 400, '/problems/bad-request'],
    [`/api/page/${'1'.repeat(101)}`, 414, '/problems/uri-too-long'],
  ];
  for (const [url, status, type] of cases) {
    const response = await app.inject({ url, headers: site.headers });
    assert.equal(response.statusCode, status, url);
    assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8', url);
    assert.equal(response.headers['cache-control'], 'no-store', url);
    // What every other answer carries, though no hook ran: the request's id, and CORS on the paths that answer other origins.
    assert.match(String(response.headers['x-request-id']), /\S/, url);
    assert.equal(response.headers['access-control-allow-origin'], '*', url);
    assert.match(String(response.headers['access-control-expose-headers']), /RateLimit/, url);
    const problem = json(response);
    assert.equal(problem.type, type, url);
    assert.equal(problem.status, status, url);
    assert.equal(problem.instance, url.split('?')[0], url);
    assert.ok(problem.detail.length > 0, url);
  }
  // A page for people answers no other origin, refused by the router or not.
  const page = await app.inject({ url: '/api/auth/interaction/%E2%82' });
  assert.equal(page.statusCode, 400, page.body);
  assert.match(String(page.headers['x-request-id']), /\S/);
  assert.equal(page.headers['access-control-allow-origin'], undefined);
  // The detail names the path, never the query string, which may hold credentials.
  const broken = await app.inject({ url: `/api/page/%zz?apiID=${site.apiId}&apiKey=${site.apiKey}` });
  assert.equal(broken.statusCode, 400);
  assert.ok(!broken.body.includes(site.apiKey), broken.body);
  assert.match(json(broken).detail, /^The path \/api\/page\/%zz is not valid/);
  // The router's own 414 message quotes the URL, query string included: the detail says what is wrong without it.
  const long = await app.inject({ url: `/api/page/${'1'.repeat(101)}?apiID=${site.apiId}&apiKey=${site.apiKey}` });
  assert.equal(long.statusCode, 414);
  assert.ok(!long.body.includes(site.apiKey), long.body);
  assert.equal(json(long).detail, 'A path parameter is longer than 100 characters, which no id or image name is: check the path.');
});

test('a body over the limit is a 413 whose detail names the limit', async (t) => {
  const { app, site } = await buildTestApp(t);
  const response = await app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...site.headers, 'content-type': 'application/json' },
    payload: `{"page_html_content":"${'a'.repeat(5 * 1024 * 1024)}"}`,
  });
  assert.equal(response.statusCode, 413);
  assert.equal(json(response).type, '/problems/payload-too-large');
  assert.equal(
    json(response).detail,
    'The body is larger than this address takes (on the content API, 5 MiB: 5242880 bytes): send less in one request.',
  );
});
