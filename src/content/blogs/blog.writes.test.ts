import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type BlogTestApp, buildBlogApp } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';

async function post(t: BlogTestApp, body: unknown, query = '') {
  return t.app.inject({ method: 'POST', url: `/api/blog${query}`, headers: t.site.headers, payload: body as object });
}

async function create(t: BlogTestApp, body: Record<string, unknown>) {
  const response = await post(t, { page: t.pageId, ...body });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

test('each field is validated on insert and update, and the error names it', async (t) => {
  const app = await buildBlogApp(t);
  const existing = await create(app, { info_title: 'Target' });
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ page: '1' }, 'page'],
    [{ page: 0 }, 'page'],
    [{ page: 1.5 }, 'page'],
    [{ info_title: 5 }, 'info_title'],
    [{ info_fulltext: null }, 'info_fulltext'],
    [{ info_summary: [] }, 'info_summary'],
    [{ info_metatitle: true }, 'info_metatitle'],
    [{ info_tags: 1 }, 'info_tags'],
    [{ info_filename: 'a/b' }, 'info_filename'],
    [{ info_filename: 'with space' }, 'info_filename'],
    [{ info_show: 'yes' }, 'info_show'],
    [{ info_show: 2 }, 'info_show'],
    [{ info_show: 'y' }, 'info_show'],
    [{ info_date: '2024-02-30' }, 'info_date'],
    [{ info_date: '2023-02-29' }, 'info_date'],
    [{ info_date: '2024-13-01' }, 'info_date'],
    [{ info_date: '2024-1-5' }, 'info_date'],
    [{ info_date: '2024-01-05 10:00:00' }, 'info_date'],
    [{ info_date: 20240105 }, 'info_date'],
    [{ info_hideuntil: '31.12.2030' }, 'info_hideuntil'],
    [{ info_hideuntil: '2030-04-31' }, 'info_hideuntil'],
    [{ info_order: -1 }, 'info_order'],
    [{ info_order: '3' }, 'info_order'],
    [{ info_order: 2.5 }, 'info_order'],
    [{ info_img: 7 }, 'info_img'],
    [{ info_more_images: '/images/a.jpg,/images/b.jpg' }, 'info_more_images'],
    [{ info_more_images: [1] }, 'info_more_images.0'],
    [{ info_object: {} }, 'info_object'],
    [{ info_blog_comments_on: 'yes' }, 'info_blog_comments_on'],
    [{ info_blog_comments_on: 2 }, 'info_blog_comments_on'],
    [{ info_authorid: -3 }, 'info_authorid'],
    [{ info_location: 1 }, 'info_location'],
    [{ info_url: 1 }, 'info_url'],
    [{ info_linktext: 1 }, 'info_linktext'],
    [{ info_linkrel: 1 }, 'info_linkrel'],
    [{ info_email: 'not-an-address' }, 'info_email'],
    [{ info_enquiryform: 1 }, 'info_enquiryform'],
    [{ info_enquiry_config: 1 }, 'info_enquiry_config'],
    [{ info_leadmagnet_followup: 1 }, 'info_leadmagnet_followup'],
    [{ info_leadmagnet_config: 1 }, 'info_leadmagnet_config'],
    [{ info_duplicationid: -1 }, 'info_duplicationid'],
    [{ info_category1: -1 }, 'info_category1'],
    [{ info_category2: 'x' }, 'info_category2'],
    [{ info_category3: 1.1 }, 'info_category3'],
    [{ info_re: 1 }, 'info_re'],
    [{ info_groupid: -1 }, 'info_groupid'],
    [{ site_search_keywords: 1 }, 'site_search_keywords'],
    [{ migrateMode: 'yes' }, 'migrateMode'],
    [{ info_unknown: 'x' }, 'info_unknown'],
    [{ id: 0 }, 'id'],
  ];
  for (const [fields, field] of cases) {
    for (const body of [
      { page: app.pageId, info_title: 'New', ...fields },
      { id: existing.info_id, ...fields },
    ]) {
      const response = await post(app, body);
      assert.equal(response.statusCode, 400, `${JSON.stringify(body)} → ${response.body}`);
      const problem = json(response);
      assert.equal(problem.title, 'Validation failed');
      assert.ok(
        problem.errors.some((e: { field: string }) => e.field === field),
        `${JSON.stringify(body)} names ${field}: ${JSON.stringify(problem.errors)}`,
      );
    }
  }
  const list = json(await app.app.inject({ url: '/api/blog', headers: app.site.headers }));
  assert.equal(list.meta.total, 1, 'no refused request inserted anything');
  assert.deepEqual(list.data[0], existing, 'no refused request changed anything');
});

test('valid values of each kind are stored and returned in their JSON form', async (t) => {
  const app = await buildBlogApp(t);
  const blog = await create(app, {
    info_title: 'All fields',
    info_fulltext: '<p>Body</p>',
    info_summary: 'Summary',
    info_metatitle: 'SEO',
    info_tags: 'a, b',
    info_show: 'N',
    info_hideuntil: '2030-01-01',
    info_date: '2024-02-29',
    info_order: 3,
    info_img: 'https://cdn.example.com/old.jpg',
    info_more_images: ['/images/legacy-1.jpg', 'https://cdn.example.com/2.png'],
    info_object: '<iframe src="https://video.example.com/1"></iframe>',
    info_blog_comments_on: true,
    info_authorid: 12,
    info_location: '1 Main St, Springfield',
    info_url: 'https://example.com',
    info_linktext: 'Example',
    info_linkrel: 'nofollow',
    info_email: 'sales@example.com',
    info_enquiryform: '<form></form>',
    info_enquiry_config: '{"a":1}',
    info_leadmagnet_followup: 'Thanks',
    info_leadmagnet_config: '{}',
    info_duplicationid: 4,
    info_category1: 1,
    info_category2: 2,
    info_category3: 3,
    info_re: 'legacy',
    info_groupid: 9,
    site_search_keywords: 'bread, baking',
  });
  assert.equal(blog.info_show, 'N');
  assert.equal(blog.info_date, '2024-02-29');
  assert.equal(blog.info_hideuntil, '2030-01-01');
  assert.equal(blog.info_blog_comments_on, true);
  assert.deepEqual(blog.info_more_images, ['/images/legacy-1.jpg', 'https://cdn.example.com/2.png']);
  assert.equal(blog.info_img, 'https://cdn.example.com/old.jpg');
  assert.equal(blog.info_img_json, null, 'metadata is only known for uploaded images');
  assert.equal(blog.info_groupid, 9);
  assert.equal(blog.site_search_keywords_updated, blog.info_timestamp, 'set when site_search_keywords is written');

  for (const [value, shown] of [
    [true, 'Y'],
    [false, 'N'],
    [1, 'Y'],
    [0, 'N'],
    ['Y', 'Y'],
    ['N', 'N'],
  ] as const) {
    const response = await post(app, { id: blog.info_id, info_show: value });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(json(response).data[0].info_show, shown, `info_show ${JSON.stringify(value)}`);
  }
  const cleared = json(await post(app, { id: blog.info_id, info_date: '', info_hideuntil: '', info_email: '' })).data[0];
  assert.equal(cleared.info_date, '');
  assert.equal(cleared.info_hideuntil, '');
});

test('page is required on insert; an unknown id is 404; id and info_id must agree', async (t) => {
  const app = await buildBlogApp(t);
  const noPage = await post(app, { info_title: 'Orphan' });
  assert.equal(noPage.statusCode, 400);
  assert.deepEqual(
    json(noPage).errors.map((e: { field: string }) => e.field),
    ['page'],
  );
  const unknownPage = await post(app, { page: 999999, info_title: 'Nowhere' });
  assert.equal(unknownPage.statusCode, 400);
  assert.equal((await post(app, { id: 999999, info_title: 'Ghost' })).statusCode, 404);
  const blog = await create(app, { info_title: 'Clash' });
  const clash = await post(app, { id: blog.info_id, info_id: blog.info_id + 1 });
  assert.equal(clash.statusCode, 400);
  assert.equal(
    json(clash).detail,
    `The body names two blogs: id ${blog.info_id} and info_id ${blog.info_id + 1}. Send the blog to update in one of them, or both with the same number.`,
  );
  assert.equal((await post(app, { id: blog.info_id, info_id: blog.info_id, info_title: 'Same id' })).statusCode, 200);
});

test('a GET → edit → POST round trip is accepted; system fields are ignored, never written', async (t) => {
  const app = await buildBlogApp(t);
  const blog = await create(app, { info_title: 'Round trip' });
  const edited = await post(app, {
    ...blog,
    info_summary: 'edited',
    info_comment_count: 99,
    info_blogcnt: 42,
    cid: 777,
    info_timestamp: '2000-01-01 00:00:00',
    info_img_json: { width: 1, height: 1, bytes: 1, type: 'image/png' },
    site_search_keywords_updated: '2000-01-01 00:00:00',
  });
  assert.equal(edited.statusCode, 200, edited.body);
  const saved = json(edited).data[0];
  assert.equal(saved.info_summary, 'edited');
  assert.equal(saved.info_comment_count, 0);
  assert.equal(saved.info_blogcnt, 0);
  assert.equal(saved.cid, app.site.siteId);
  assert.equal(saved.info_img_json, null);
  assert.equal(saved.site_search_keywords_updated, '');
  assert.notEqual(saved.info_timestamp, '2000-01-01 00:00:00');
});

test('an update changes only the fields sent; one that changes nothing keeps info_timestamp and the ETag', async (t) => {
  const app = await buildBlogApp(t);
  const blog = await create(app, { info_title: 'Stable', info_summary: 'kept', info_order: 2 });
  const changed = json(await post(app, { id: blog.info_id, info_title: 'Renamed' })).data[0];
  assert.equal(changed.info_title, 'Renamed');
  assert.equal(changed.info_summary, 'kept');
  assert.equal(changed.info_order, 2);
  assert.equal(changed.info_filename, 'stable', 'an existing filename is not regenerated');

  const first = await post(app, { id: blog.info_id, info_title: 'Renamed', info_summary: 'kept' });
  const second = await post(app, { id: blog.info_id, info_title: 'Renamed', info_summary: 'kept' });
  assert.equal(first.statusCode, 200);
  assert.deepEqual(json(second).data[0], json(first).data[0]);
  assert.equal(second.headers.etag, first.headers.etag);
  assert.equal(json(first).data[0].info_timestamp, changed.info_timestamp);
});

test('filenames come from the title, are unique within the website, and an explicit duplicate is 409', async (t) => {
  const app = await buildBlogApp(t);
  assert.equal((await create(app, { info_title: 'Crème Brûlée!' })).info_filename, 'creme-brulee');
  assert.equal((await create(app, { info_title: 'Crème brûlée' })).info_filename, 'creme-brulee-2');
  assert.equal((await create(app, { info_title: 'creme brulee' })).info_filename, 'creme-brulee-3');
  assert.equal((await create(app, { info_title: '!!!' })).info_filename, 'blog');
  const taken = await post(app, { page: app.pageId, info_title: 'X', info_filename: 'creme-brulee' });
  assert.equal(taken.statusCode, 409);
  assert.equal(
    json(taken).detail,
    'Another blog of this website already has the filename "creme-brulee": choose another info_filename, or send it empty to have one made from the title.',
  );
  const chosen = await create(app, { info_title: 'Y', info_filename: 'my-own_name.html' });
  assert.equal(chosen.info_filename, 'my-own_name.html');
  const regenerated = await post(app, { id: chosen.info_id, info_filename: '' });
  assert.equal(json(regenerated).data[0].info_filename, 'y');
  const again = await post(app, { id: chosen.info_id, info_filename: '' });
  assert.equal(json(again).data[0].info_filename, 'y', 'a blog does not stand in the way of its own name');
  assert.equal(again.headers.etag, regenerated.headers.etag, 'sending it again changes nothing');
  const list = json(await app.app.inject({ url: '/api/blog', headers: app.site.headers }));
  assert.equal(list.meta.total, 5, 'the refused insert left nothing');
});

test('concurrent inserts with one title all succeed with distinct filenames', async (t) => {
  const app = await buildBlogApp(t);
  const responses = await Promise.all(Array.from({ length: 6 }, () => post(app, { page: app.pageId, info_title: 'Same title' })));
  assert.deepEqual(
    responses.map((r) => r.statusCode),
    Array(6).fill(201),
  );
  const names = responses.map((r) => json(r).data[0].info_filename).sort();
  assert.deepEqual(names, ['same-title', 'same-title-2', 'same-title-3', 'same-title-4', 'same-title-5', 'same-title-6']);
});
