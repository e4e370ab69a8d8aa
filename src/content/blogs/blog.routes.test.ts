import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildBlogApp } from '../../../test/blog-fixtures.js';
import { json, type TestApp } from '../../../test/helpers.js';
import { BLOG_FIELDS } from './blog.fields.js';

async function create(t: TestApp, body: Record<string, unknown>, prefix = '/api') {
  const response = await t.app.inject({ method: 'POST', url: `${prefix}/blog`, headers: t.site.headers, payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

test('a blog is inserted, read back, listed and deleted under /api and /webapps/api', async (t) => {
  const app = await buildBlogApp(t);
  for (const prefix of ['/api', '/webapps/api']) {
    const created = await app.app.inject({
      method: 'POST',
      url: `${prefix}/blog`,
      headers: app.site.headers,
      payload: { page: app.pageId, info_title: 'First post', info_fulltext: '<p>Hello</p>' },
    });
    assert.equal(created.statusCode, 201, created.body);
    const blog = json(created).data[0];
    assert.equal(created.headers.location, `${prefix}/blog/${blog.info_id}`);
    assert.match(String(created.headers.etag), /^"[\w-]+"$/);
    assert.equal(blog.id, blog.info_id, 'a blog carries both info_id and id');
    assert.equal(blog.page, app.pageId);
    assert.equal(blog.cid, app.site.siteId);
    assert.equal(blog.info_show, 'Y');
    assert.equal(blog.info_img_json, null);
    assert.deepEqual(blog.info_more_images, []);
    assert.match(blog.info_timestamp, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    assert.match(blog.info_date, /^\d{4}-\d\d-\d\d$/, 'today when absent');

    const one = await app.app.inject({ url: `${prefix}/blog/${blog.info_id}`, headers: app.site.headers });
    assert.equal(one.statusCode, 200);
    assert.deepEqual(json(one), { data: [blog], meta: { total: 1, offset: 0, pageSize: 200 } });
    assert.equal(one.headers.etag, created.headers.etag, 'the ETag of a write is the ETag of the record read back');
    const byQuery = await app.app.inject({ url: `${prefix}/blog?id=${blog.info_id}`, headers: app.site.headers });
    assert.deepEqual(json(byQuery).data, [blog]);

    const removed = await app.app.inject({ method: 'DELETE', url: `${prefix}/blog/${blog.info_id}`, headers: app.site.headers });
    assert.equal(removed.statusCode, 204);
    assert.equal((await app.app.inject({ url: `${prefix}/blog/${blog.info_id}`, headers: app.site.headers })).statusCode, 404);
    assert.deepEqual(json(await app.app.inject({ url: `${prefix}/blog?id=${blog.info_id}`, headers: app.site.headers })), {
      data: [],
      meta: { total: 0, offset: 0, pageSize: 200 },
    });
    const again = await app.app.inject({ method: 'DELETE', url: `${prefix}/blog/${blog.info_id}`, headers: app.site.headers });
    assert.equal(again.statusCode, 404);
    assert.equal(again.headers['content-type'], 'application/problem+json; charset=utf-8');
  }
});

test('every field of spec §2.2 and the sample fields are returned', async (t) => {
  const app = await buildBlogApp(t);
  const blog = await create(app, { page: app.pageId, info_title: 'Fields', info_blog_comments_on: 1 });
  assert.deepEqual(Object.keys(blog).sort(), [...Object.keys(BLOG_FIELDS), 'id'].sort());
  for (const field of [
    'info_category1',
    'info_category2',
    'info_category3',
    'info_blogcnt',
    'info_re',
    'info_groupid',
    'site_search_keywords',
    'site_search_keywords_updated',
    'cid',
    'info_id',
    'id',
  ]) {
    assert.ok(field in blog, field);
  }
  assert.equal(blog.info_blog_comments_on, true);
  assert.equal(blog.info_comment_count, 0);
  assert.equal(blog.info_blogcnt, 0);
});

test('POST with id and DELETE honour If-Match', async (t) => {
  const app = await buildBlogApp(t);
  const blog = await create(app, { page: app.pageId, info_title: 'Tagged' });
  const read = await app.app.inject({ url: `/api/blog/${blog.info_id}`, headers: app.site.headers });
  const etag = String(read.headers.etag);
  const stale = await app.app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: { ...app.site.headers, 'if-match': '"stale"' },
    payload: { id: blog.info_id, info_title: 'Lost update' },
  });
  assert.equal(stale.statusCode, 412);
  const fresh = await app.app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: { ...app.site.headers, 'if-match': etag },
    payload: { id: blog.info_id, info_title: 'Changed' },
  });
  assert.equal(fresh.statusCode, 200, fresh.body);
  assert.equal(json(fresh).data[0].info_title, 'Changed');
  const staleDelete = await app.app.inject({
    method: 'DELETE',
    url: `/api/blog/${blog.info_id}`,
    headers: { ...app.site.headers, 'if-match': etag },
  });
  assert.equal(staleDelete.statusCode, 412);
  const freshDelete = await app.app.inject({
    method: 'DELETE',
    url: `/api/blog/${blog.info_id}`,
    headers: { ...app.site.headers, 'if-match': String(fresh.headers.etag) },
  });
  assert.equal(freshDelete.statusCode, 204);
});

test('a page holding blogs cannot be deleted (409) until its blogs are gone', async (t) => {
  const app = await buildBlogApp(t);
  const blog = await create(app, { page: app.pageId, info_title: 'Holds the page' });
  const refused = await app.app.inject({ method: 'DELETE', url: `/api/page/${app.pageId}`, headers: app.site.headers });
  assert.equal(refused.statusCode, 409);
  assert.match(json(refused).detail, /1 blog/);
  assert.equal((await app.app.inject({ url: `/api/page/${app.pageId}`, headers: app.site.headers })).statusCode, 200);
  await app.app.inject({ method: 'DELETE', url: `/api/blog/${blog.info_id}`, headers: app.site.headers });
  const deleted = await app.app.inject({ method: 'DELETE', url: `/api/page/${app.pageId}`, headers: app.site.headers });
  assert.equal(deleted.statusCode, 204);
});

test("one website can neither read, update nor delete another website's blogs, nor use its pages", async (t) => {
  const app = await buildBlogApp(t);
  const blog = await create(app, { page: app.pageId, info_title: 'Private to A' });
  const other = await app.addSite('Site B');
  const asB = (options: { method?: 'GET' | 'POST' | 'DELETE'; url: string; payload?: object }) =>
    app.app.inject({ ...options, headers: other.headers });

  assert.equal((await asB({ url: `/api/blog/${blog.info_id}` })).statusCode, 404);
  assert.deepEqual(json(await asB({ url: `/api/blog?id=${blog.info_id}` })).data, []);
  const emptyForB = json(await asB({ url: '/api/blog' }));
  assert.deepEqual([emptyForB.data, emptyForB.meta.total], [[], 0]);
  assert.equal((await asB({ method: 'POST', url: '/api/blog', payload: { id: blog.info_id, info_title: 'Hijacked' } })).statusCode, 404);
  assert.equal((await asB({ method: 'DELETE', url: `/api/blog/${blog.info_id}` })).statusCode, 404);
  const onForeignPage = await asB({ method: 'POST', url: '/api/blog', payload: { page: app.pageId, info_title: 'Squatter' } });
  assert.equal(onForeignPage.statusCode, 400, "a blog's page must be a page of the same website");
  assert.deepEqual(json(onForeignPage).errors, [
    { field: 'page', message: `there is no page ${app.pageId} on this website: name one of its pages (GET /api/page lists them)` },
  ]);

  // B's own page, then an attempt to move A's blog onto it from A's side.
  const pageB = json(await asB({ method: 'POST', url: '/api/page', payload: { page_usertitle: 'B blog' } })).data[0].page;
  const move = await app.app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: app.site.headers,
    payload: { id: blog.info_id, page: pageB },
  });
  assert.equal(move.statusCode, 400);

  const still = json(await app.app.inject({ url: `/api/blog/${blog.info_id}`, headers: app.site.headers })).data[0];
  assert.deepEqual(still, blog, 'nothing of A changed');
  // The same filename is free in another website.
  const sameName = await asB({ method: 'POST', url: '/api/blog', payload: { page: pageB, info_title: 'Private to A' } });
  assert.equal(json(sameName).data[0].info_filename, 'private-to-a');
  // Each website's list holds its own rows and no other: the rows, not only their count, by
  // offset and by cursor.
  const ids = (response: { body: string }) => (json(response).data as { info_id: number }[]).map((b) => b.info_id);
  for (const url of ['/api/blog', '/api/blog?cursor=']) {
    assert.deepEqual(ids(await asB({ url })), [json(sameName).data[0].info_id], url);
    assert.deepEqual(ids(await app.app.inject({ url, headers: app.site.headers })), [blog.info_id], url);
  }
});

test('the blog endpoint answers its reference and is in the OpenAPI document with the multipart form', async (t) => {
  const app = await buildBlogApp(t);
  const markdown = await app.app.inject({ url: '/webapps/api/blog', headers: { accept: 'text/markdown' } });
  assert.equal(markdown.statusCode, 200);
  assert.match(markdown.body, /^# \/api\/blog\n/);
  assert.match(markdown.body, /\| info_more_images \| array of string \|/);
  assert.match(markdown.body, /### Form fields \(multipart\/form-data\)/);
  assert.match(markdown.body, /\| uploadAdditionalImages \| array of string \(binary\) \|/);
  assert.match(markdown.body, /\| migrateMode \| /);
  const asJson = await app.app.inject({ url: '/api/blog', headers: { accept: 'application/json' } });
  assert.equal(asJson.statusCode, 401);
  const post = json(asJson).reference.methods.find((m: { method: string }) => m.method === 'POST');
  assert.ok(post.bodyFields.some((f: { name: string }) => f.name === 'info_title'));
  assert.ok(post.formFields.some((f: { name: string }) => f.name === 'uploadPrimaryImage'));
  assert.ok(post.queryParameters.some((f: { name: string }) => f.name === 'migrateMode'));

  const doc = json(await app.app.inject({ url: '/api/openapi.json' }));
  const body = doc.paths['/api/blog'].post.requestBody.content;
  assert.deepEqual(body['application/json'].schema, { $ref: '#/components/schemas/BlogInput' });
  assert.ok(doc.components.schemas.BlogInput.properties.info_title);
  assert.deepEqual(body['multipart/form-data'].schema, { $ref: '#/components/schemas/BlogForm' });
  assert.ok(doc.components.schemas.BlogForm.properties.uploadPrimaryImage);
  assert.ok(doc.paths['/api/blog'].get.parameters.some((p: { name: string }) => p.name === 'tags'));
  assert.equal(doc.paths['/webapps/api/blog'], undefined);
});

test('a page deleted while blogs are being added to it: either the page stays with its blogs, or neither', async (t) => {
  const app = await buildBlogApp(t);
  for (let round = 0; round < 5; round++) {
    const pageId = json(
      await app.app.inject({ method: 'POST', url: '/api/page', headers: app.site.headers, payload: { page_usertitle: `Race ${round}` } }),
    ).data[0].page;
    const [deleted, ...inserts] = await Promise.all([
      app.app.inject({ method: 'DELETE', url: `/api/page/${pageId}`, headers: app.site.headers }),
      ...[1, 2, 3].map((n) =>
        app.app.inject({
          method: 'POST',
          url: '/api/blog',
          headers: app.site.headers,
          payload: { page: pageId, info_title: `R${round}-${n}` },
        }),
      ),
    ]);
    const saved = inserts.filter((r) => r.statusCode === 201).length;
    for (const r of inserts) assert.ok([201, 400].includes(r.statusCode), r.body);
    if (deleted.statusCode === 204) assert.equal(saved, 0, 'no blog on a deleted page');
    else assert.equal(deleted.statusCode, 409, deleted.body);
    const onPage = json(await app.app.inject({ url: `/api/blog?page=${pageId}`, headers: app.site.headers })).meta.total;
    assert.equal(onPage, saved);
  }
});
