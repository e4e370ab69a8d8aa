import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json, TEST_DATABASE_URL } from '../../test/helpers.js';
import { FILTER_TEXT_MAX } from '../content/shared/schemas.js';

// Found by the fuzz suite on PostgreSQL: a NUL character reached a query and answered 500.
test('a NUL character in a text filter is a 400 naming the filter, on both databases: SQLite ended the pattern there and matched every page', async (t) => {
  const { app, site } = await buildTestApp(t);
  await app.inject({
    method: 'POST',
    url: '/api/page',
    headers: site.headers,
    payload: { page_usertitle: 'Tagged', page_keywords: 'a, b' },
  });
  for (const query of ['tags=%00', 'tag=a%00', 'title=%25%00', 'filename=x%00y', 'keywords=%00', 'menutext=%00']) {
    const response = await app.inject({ url: `/api/page?${query}`, headers: site.headers });
    assert.equal(response.statusCode, 400, `${query}: ${response.body}`);
    assert.match(json(response).errors[0].message, /must hold no NUL character \(%00\)/, query);
  }
  const blogs = await app.inject({ url: '/api/blog?title=%00', headers: site.headers });
  assert.equal(blogs.statusCode, 400, blogs.body);
});

test('a NUL character in a field is never a 500; PostgreSQL, which cannot store it, answers 400', async (t) => {
  const { app, site } = await buildTestApp(t);
  const filtered = await app.inject({ url: '/api/page?tags=%00', headers: site.headers });
  const written = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'a\u0000b' } });
  for (const response of [filtered, written]) assert.ok(response.statusCode < 500, `${response.statusCode} ${response.body}`);
  if (!TEST_DATABASE_URL) return; // SQLite stores and matches it like any other character
  for (const response of [filtered, written]) {
    assert.equal(response.statusCode, 400, response.body);
    assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.match(json(response).detail, /NUL character/);
  }
  assert.match(json(written).detail, /Remove it from the value and send it again\.$/);
  const { meta } = json(await app.inject({ url: '/api/page', headers: site.headers }));
  assert.equal(meta.total, 0, 'nothing was written');
});

// Found by the fuzz suite on SQLite: a filter of tens of kilobytes made a LIKE pattern SQLite refuses.
test('a text filter longer than FILTER_TEXT_MAX is a 400 naming it; one of that length is answered', async (t) => {
  const { app, site } = await buildTestApp(t);
  for (const path of ['/api/page', '/api/blog']) {
    for (const name of ['title', 'filename', 'tags', 'keywords']) {
      const long = await app.inject({ url: `${path}?${name}=${'é'.repeat(FILTER_TEXT_MAX + 1)}`, headers: site.headers });
      assert.equal(long.statusCode, 400, `${path} ${name}: ${long.body.slice(0, 200)}`);
      assert.equal(json(long).type, '/problems/validation-failed');
      assert.match(JSON.stringify(json(long).errors), new RegExp(name));
    }
    const longest = await app.inject({ url: `${path}?filename=${'é'.repeat(FILTER_TEXT_MAX)}`, headers: site.headers });
    assert.equal(longest.statusCode, 200, longest.body.slice(0, 200));
  }
});
