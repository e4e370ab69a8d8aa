/**
 * Field selection of lists (allFields, fields) and the filters the platform's clients send
 * (`tag` for `tags`, `menutext`), on pages and blogs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type BlogTestApp, buildBlogApp } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';
import { BLOG_BODY_FIELDS, BLOG_FIELDS } from '../blogs/blog.fields.js';
import { PAGE_BODY_FIELDS, PAGE_FIELDS } from '../pages/page.fields.js';

type Item = Record<string, unknown> & { id: number };

async function post(app: BlogTestApp, path: string, body: Record<string, unknown>): Promise<Item> {
  const response = await app.app.inject({ method: 'POST', url: `/api/${path}`, headers: app.site.headers, payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

async function get(app: BlogTestApp, url: string) {
  const response = await app.app.inject({ url, headers: app.site.headers });
  assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
  return { body: json(response) as { data: Item[]; meta: Record<string, unknown> }, etag: String(response.headers.etag) };
}

const RESOURCES = [
  {
    path: 'page',
    names: [...Object.keys(PAGE_FIELDS), 'id'],
    ids: ['page', 'id'],
    bodies: PAGE_BODY_FIELDS as readonly string[],
    body: () => ({ page_usertitle: 'Hello', page_menuname: 'Hi', page_html_content: '<p>Body</p>', page_html_intro: '<p>Intro</p>' }),
  },
  {
    path: 'blog',
    names: [...Object.keys(BLOG_FIELDS), 'id'],
    ids: ['info_id', 'id'],
    bodies: BLOG_BODY_FIELDS as readonly string[],
    body: (app: BlogTestApp) => ({ page: app.pageId, info_title: 'Hello', info_fulltext: '<p>Body</p>', info_tags: 'a, b' }),
  },
] as const;

for (const resource of RESOURCES) {
  test(`${resource.path}s: allFields=false leaves out the HTML bodies; fields= sends those fields and the ids`, async (t) => {
    const app = await buildBlogApp(t);
    const made = await post(app, resource.path, resource.body(app));
    const url = `/api/${resource.path}?id=${made.id}`;
    const full = await get(app, url);
    assert.deepEqual(full.body.data[0], made, 'every field by default');
    for (const q of ['allFields=true', 'allFields=1']) assert.deepEqual((await get(app, `${url}&${q}`)).body, full.body, q);

    for (const q of ['allFields=false', 'allFields=0']) {
      const lean = await get(app, `${url}&${q}`);
      const expected = Object.fromEntries(Object.entries(made).filter(([k]) => !resource.bodies.includes(k)));
      assert.deepEqual(lean.body.data[0], expected, q);
      assert.deepEqual(Object.keys(lean.body.data[0]!), Object.keys(expected), `${q}: in the record's order`);
      assert.deepEqual(lean.body.meta, full.body.meta);
      assert.notEqual(lean.etag, full.etag, `${q}: other bytes, another ETag`);
    }

    const title = resource.path === 'page' ? 'page_usertitle' : 'info_title';
    const other = resource.path === 'page' ? 'wgt_id' : 'cid';
    // Spaces around names are dropped, a name given twice is sent once.
    const chosen = (await get(app, `${url}&fields=${title},%20${other},${title}`)).body.data[0]!;
    const names = [...resource.ids, title, other];
    assert.deepEqual(Object.keys(chosen).sort(), names.sort(), 'the fields asked for, and the ids');
    for (const name of names) assert.deepEqual(chosen[name], made[name]);
    assert.deepEqual(Object.keys((await get(app, `${url}&fields=id`)).body.data[0]!).sort(), [...resource.ids].sort(), 'only the ids');
    const decided = (await get(app, `${url}&fields=${title}&allFields=true`)).body.data[0]!;
    assert.deepEqual(Object.keys(decided).sort(), [...resource.ids, title].sort(), 'fields decides over allFields');
    // With cursor paging too, and If-None-Match on the projected list.
    const paged = await get(app, `/api/${resource.path}?cursor=&allFields=false`);
    assert.ok(paged.body.data.every((item) => resource.bodies.every((b) => !(b in item))));
    const again = await app.app.inject({
      url: `/api/${resource.path}?cursor=&allFields=false`,
      headers: { ...app.site.headers, 'if-none-match': paged.etag },
    });
    assert.equal(again.statusCode, 304);
  });

  test(`${resource.path}s: an unknown or empty field name is a 400 naming fields that lists the allowed names`, async (t) => {
    const app = await buildBlogApp(t);
    for (const [q, unknown] of [
      ['fields=nope', 'nope'],
      ['fields=id,Nope,also_not', 'Nope, also_not'],
      ['fields=', '(an empty name)'],
      ['fields=id,,id', '(an empty name)'],
    ] as const) {
      const response = await app.app.inject({ url: `/api/${resource.path}?${q}`, headers: app.site.headers });
      assert.equal(response.statusCode, 400, q);
      assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
      assert.deepEqual(json(response).errors, [
        { field: 'fields', message: `has unknown field names: ${unknown}; allowed: ${resource.names.join(', ')}` },
      ]);
    }
    const response = await app.app.inject({ url: `/api/${resource.path}?allFields=no`, headers: app.site.headers });
    assert.equal(response.statusCode, 400);
    assert.equal(json(response).errors[0].field, 'allFields');
  });
}

test('tag= is tags=, on pages and blogs; both must hold when both are sent', async (t) => {
  const app = await buildBlogApp(t);
  const a = await post(app, 'page', { page_usertitle: 'A', page_keywords: 'bread, cake' });
  const b = await post(app, 'page', { page_usertitle: 'B', page_keywords: 'cake' });
  const x = await post(app, 'blog', { page: app.pageId, info_title: 'X', info_tags: 'news,Bread' });
  await post(app, 'blog', { page: app.pageId, info_title: 'Y', info_tags: 'news' });
  const ids = async (url: string) => (await get(app, url)).body.data.map((item) => item.id);
  assert.deepEqual(await ids('/api/page?tag=bread'), [a.id]);
  assert.deepEqual(await ids('/api/page?tag=cake'), await ids('/api/page?tags=cake'));
  assert.deepEqual(await ids('/api/page?tag=cake&orderBy=id'), [a.id, b.id]);
  assert.deepEqual(await ids('/api/page?tag=cake&tags=bread'), [a.id]);
  assert.deepEqual(await ids('/api/page?tag=cake&tags=nothing'), []);
  assert.deepEqual(await ids('/api/blog?tag=bread'), [x.id]);
  assert.deepEqual(await ids('/api/blog?tag=br%25&matchType=like'), [x.id]);
  const twice = await app.app.inject({ url: '/api/blog?tag=a&tag=b', headers: app.site.headers });
  assert.equal(twice.statusCode, 400, 'a parameter given twice, as for every parameter');
});

test('menutext filters pages by menu text with the patterns and match types of the other text filters', async (t) => {
  const app = await buildBlogApp(t);
  const home = await post(app, 'page', { page_usertitle: 'Welcome to our bakery', page_menuname: 'Home' });
  const shop = await post(app, 'page', { page_usertitle: 'Home delivery', page_menuname: 'Shop 50% off' });
  const ids = async (q: string) => (await get(app, `/api/page?${q}`)).body.data.map((item) => item.id);
  assert.deepEqual(await ids('menutext=home'), [home.id], 'case-insensitive, whole value');
  assert.deepEqual(await ids('menutext=hom'), []);
  assert.deepEqual(await ids('menutext=%25off'), [shop.id]);
  assert.deepEqual(await ids('menutext=shop%2050%5C%25%25'), [shop.id], 'an escaped %');
  assert.deepEqual(await ids('menutext=50%25&matchType=contains'), [shop.id], 'contains takes % literally');
  assert.deepEqual(await ids('menutext=Home%25'), [home.id], 'the H1 title is not the menu text');
  assert.deepEqual((await ids('title=home%25')).sort(), [home.id, shop.id].sort(), 'title matches either');
  const blog = await app.app.inject({ url: '/api/blog?menutext=x', headers: app.site.headers });
  assert.equal(blog.statusCode, 400, 'blogs have no menu text');
});
