import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type BlogTestApp, buildBlogApp, image, postForm } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';
import { assertEveryRecordStored, columnBuiltList, type Resource, storedAndBuilt } from '../../../test/stored-records.js';

type Snapshot = Map<string, string>;

/** Every page's and blog's stored JSON and ETag, keyed "page 3" / "blog 7". */
async function snapshot(app: BlogTestApp): Promise<Snapshot> {
  const all: Snapshot = new Map();
  for (const resource of ['page', 'blog'] as const) {
    for (const [id, s] of await storedAndBuilt(app.db.kysely, resource)) all.set(`${resource} ${id}`, `${s.etag} ${s.record_json}`);
  }
  return all;
}

/** Which records' stored JSON or ETag differ between two snapshots. */
function changed(before: Snapshot, after: Snapshot): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys].filter((k) => before.get(k) !== after.get(k)).sort();
}

async function post(app: BlogTestApp, resource: Resource, payload: object, headers: Record<string, string> = {}, query = '') {
  return app.app.inject({ method: 'POST', url: `/api/${resource}${query}`, headers: { ...app.site.headers, ...headers }, payload });
}

async function created(app: BlogTestApp, resource: Resource, payload: object): Promise<number> {
  const response = await post(app, resource, payload);
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0].id;
}

async function get(app: BlogTestApp, url: string, headers: Record<string, string> = {}) {
  return app.app.inject({ url, headers: { ...app.site.headers, ...headers } });
}

/** Runs a write and checks which records' stored JSON or ETag it changed: exactly `expected`. */
async function expectChange<R extends { statusCode: number; body: string }>(
  app: BlogTestApp,
  expected: string[],
  write: () => Promise<R>,
): Promise<R> {
  const before = await snapshot(app);
  const response = await write();
  const after = await snapshot(app);
  assert.deepEqual(changed(before, after), expected, `status ${response.statusCode}: ${response.body.slice(0, 300)}`);
  return response;
}

test('stored JSON and ETag change with every kind of write, for that record only, and not on a refused write', async (t) => {
  const app = await buildBlogApp(t);
  const other = await created(app, 'page', { page_usertitle: 'Other', page_crop_aspect: true });
  const page = await created(app, 'page', { page_usertitle: 'About', page_html_content: '<p>"quoted" & <b>bold</b></p>' });
  const blog = await created(app, 'blog', { page: app.pageId, info_title: 'First', info_show: 'N' });
  const sibling = await created(app, 'blog', { page: app.pageId, info_title: 'Second', info_tags: 'a, b' });

  const pageUpdate = await expectChange(app, [`page ${page}`], () => post(app, 'page', { id: page, page_usertitle: 'About us' }));
  assert.equal(pageUpdate.statusCode, 200);
  const stored = await storedAndBuilt(app.db.kysely, 'page');
  assert.equal(pageUpdate.headers.etag, stored.get(page)!.etag, "the POST answer carries the saved record's stored ETag");
  const read = await get(app, `/api/page/${page}`);
  assert.equal(read.headers.etag, stored.get(page)!.etag);
  assert.equal(read.body, `{"data":[${stored.get(page)!.built}],"meta":{"total":1,"offset":0,"pageSize":200}}`);

  await expectChange(app, [`blog ${blog}`], () => post(app, 'blog', { id: blog, info_title: 'First, edited' }));
  // Image changes: by path, by upload, and migrateMode adding to the list.
  await expectChange(app, [`blog ${blog}`], () =>
    post(app, 'blog', { id: blog, info_img: '/legacy/cover.jpg', info_more_images: ['/legacy/a.jpg'] }),
  );
  await expectChange(app, [`blog ${blog}`], async () =>
    postForm(app, [
      ['data', JSON.stringify({ id: blog })],
      ['uploadPrimaryImage', { file: await image('png', 12, 9), filename: 'cover.png' }],
    ]),
  );
  const migrate = { id: blog, info_more_images: ['/legacy/b.jpg'] };
  await expectChange(app, [`blog ${blog}`], () => post(app, 'blog', migrate, {}, '?migrateMode=true'));
  const repeated = await expectChange(app, [], () => post(app, 'blog', migrate, {}, '?migrateMode=true'));
  assert.equal(repeated.statusCode, 200, 'a repeated migration changes nothing, its stored record included');
  assert.equal(repeated.headers.etag, (await storedAndBuilt(app.db.kysely, 'blog')).get(blog)!.etag);

  // Refused writes leave every stored record as it was.
  const staleTag = pageUpdate.headers.etag as string;
  await post(app, 'page', { id: page, page_usertitle: 'Newer' });
  const refused: Array<[number, () => Promise<{ statusCode: number; body: string }>]> = [
    [412, () => post(app, 'page', { id: page, page_usertitle: 'Lost update' }, { 'if-match': staleTag })],
    [412, () => post(app, 'blog', { id: blog, info_title: 'Lost update' }, { 'if-match': staleTag })],
    [409, () => post(app, 'page', { id: other, page_alias: 'blog' })],
    [409, () => post(app, 'blog', { id: sibling, info_filename: 'first' })],
    [400, () => post(app, 'page', { id: app.pageId, page_parent: app.pageId })],
    [400, () => post(app, 'blog', { id: sibling, page: 999_999 })],
    [400, () => post(app, 'blog', { id: sibling, info_title: 5 })],
  ];
  for (const [status, write] of refused) {
    const response = await expectChange(app, [], write);
    assert.equal(response.statusCode, status, response.body);
  }
  assert.equal(await assertEveryRecordStored(app.db.kysely), 5, 'three pages and two blogs, each checked');
});

test('If-Match compares with the stored ETag, and If-None-Match answers 304 as before', async (t) => {
  const app = await buildBlogApp(t);
  const blog = await created(app, 'blog', { page: app.pageId, info_title: 'Tagged' });
  for (const url of [`/api/page/${app.pageId}`, `/api/blog/${blog}`, '/api/page', '/api/blog?publicContentOnly=true']) {
    const first = await get(app, url);
    assert.equal(first.statusCode, 200);
    assert.match(first.headers.etag as string, /^"[\w-]{27}"$/);
    const again = await get(app, url, { 'if-none-match': `W/"x", ${first.headers.etag}` });
    assert.equal(again.statusCode, 304, url);
    assert.equal(again.body, '');
  }
  const tag = (await get(app, `/api/blog/${blog}`)).headers.etag as string;
  const weak = await post(app, 'blog', { id: blog, info_title: 'Weak' }, { 'if-match': `W/${tag}` });
  assert.equal(weak.statusCode, 412, 'a weak tag never matches under If-Match');
  const saved = await post(app, 'blog', { id: blog, info_title: 'Strong' }, { 'if-match': `"other", ${tag}` });
  assert.equal(saved.statusCode, 200, saved.body);
  assert.notEqual(saved.headers.etag, tag);
  const next = await post(app, 'blog', { id: blog, info_title: 'Again' }, { 'if-match': saved.headers.etag as string });
  assert.equal(next.statusCode, 200, 'the ETag a POST answers is the one the next If-Match is compared with');
  const deleted = await app.app.inject({
    method: 'DELETE',
    url: `/api/blog/${blog}`,
    headers: { ...app.site.headers, 'if-match': tag },
  });
  assert.equal(deleted.statusCode, 412);
  assert.equal((await post(app, 'page', { id: app.pageId, page_order: 3 }, { 'if-match': '*' })).statusCode, 200);
});

/** The list answer, and the envelope built from the columns for the same records and meta. */
async function listed(app: BlogTestApp, resource: Resource, query: string) {
  const response = await get(app, `/api/${resource}${query}`);
  assert.equal(response.statusCode, 200, response.body);
  const { data, meta } = json(response);
  const expected = await columnBuiltList(
    app.db.kysely,
    resource,
    data.map((r: { id: number }) => r.id),
    meta,
  );
  return { response, expected, count: data.length as number };
}

test('list bodies are byte for byte the envelope built from the columns', async (t) => {
  const app = await buildBlogApp(t);
  const members = await created(app, 'page', { page_usertitle: 'Members', page_privacy: 1, page_keywords: 'club, news' });
  await created(app, 'page', { page_usertitle: 'Inside', page_parent: members, page_html_intro: '<p>Ünïcode — “quotes” 🍰 \\ </p>' });
  for (let i = 0; i < 4; i++)
    await created(app, 'page', { page_usertitle: `Page ${i}`, page_order: 4 - i, page_crop_aspect_thumbs: i % 2 === 0 });
  for (let i = 0; i < 3; i++) {
    await created(app, 'blog', {
      page: i === 0 ? members : app.pageId,
      info_title: `Post ${i}`,
      info_show: i === 2 ? 'N' : 'Y',
      info_more_images: [`/legacy/${i}.jpg`],
      info_fulltext: '<p>line\nbreak\ttab</p>',
    });
  }
  const queries: Array<[Resource, string]> = [
    ['page', ''],
    ['page', '?publicContentOnly=true'],
    ['page', '?offset=2&pageSize=3'],
    ['page', `?parent=${members}`],
    ['page', '?title=nothing-matches'],
    ['page', '?keywords=page'],
    ['blog', ''],
    ['blog', '?publicContentOnly=true'],
    ['blog', '?pageSize=1&offset=1'],
    ['blog', '?tags=nothing'],
  ];
  let records = 0;
  for (const [resource, query] of queries) {
    const { response, expected, count } = await listed(app, resource, query);
    assert.equal(response.body, expected, `${resource}${query}`);
    records += count;
  }
  assert.ok(records > 15, 'the lists were not empty');
});

test("a list's ETag follows its records, total and window, not records outside it", async (t) => {
  const app = await buildBlogApp(t);
  const parent = await created(app, 'page', { page_usertitle: 'Parent' });
  const inside = await created(app, 'page', { page_usertitle: 'Child', page_parent: parent });
  const outside = await created(app, 'page', { page_usertitle: 'Elsewhere' });
  const url = `/api/page?parent=${parent}`;
  const tag = async (u = url) => (await get(app, u)).headers.etag as string;

  const first = await tag();
  await post(app, 'page', { id: outside, page_usertitle: 'Elsewhere, edited' });
  assert.equal(await tag(), first, 'a record outside the filter changed: the list did not');
  assert.equal((await get(app, url, { 'if-none-match': first })).statusCode, 304);

  await post(app, 'page', { id: inside, page_usertitle: 'Child, edited' });
  const second = await tag();
  assert.notEqual(second, first, 'a record in the list changed');
  assert.equal((await get(app, url, { 'if-none-match': first })).statusCode, 200);

  await created(app, 'page', { page_usertitle: 'Second child', page_parent: parent, page_order: 9 });
  const windowed = `${url}&pageSize=1`;
  const onePage = await tag(windowed);
  assert.notEqual(onePage, await tag(), 'the window is part of the tag');
  await created(app, 'page', { page_usertitle: 'Third child', page_parent: parent, page_order: 10 });
  assert.notEqual(await tag(windowed), onePage, 'the same first record, but the total changed');
  assert.notEqual(await tag(`${url}&offset=1`), await tag(), 'the offset is part of the tag');
});
