import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json, type TestApp } from '../../../test/helpers.js';
import { PAGE_FIELDS } from './page.fields.js';

async function post(t: TestApp, body: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'POST', url: '/api/page', headers: { ...t.site.headers, ...headers }, payload: body as object });
}

async function create(t: TestApp, body: Record<string, unknown>) {
  const response = await post(t, body);
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

test('every field of the page resource is returned with its type', async (t) => {
  const app = await buildTestApp(t);
  const page = await create(app, { page_usertitle: 'Fields', page_crop_aspect: 1, page_crop_aspect_thumbs: false });
  assert.deepEqual(Object.keys(page).sort(), [...Object.keys(PAGE_FIELDS), 'id'].sort(), 'every field of spec §2.1, and id');
  assert.equal(Object.keys(page).length, 59);
  assert.equal(page.page_crop_aspect, true);
  assert.equal(page.page_crop_aspect_thumbs, false);
  assert.equal(page.page_parent, 0);
  assert.equal(page.page_notify, '');
  assert.equal(typeof page.wgt_id, 'number');
});

test('an update changes only the fields sent and moves page_lastmodified', async (t) => {
  const app = await buildTestApp(t);
  const page = await create(app, { page_usertitle: 'Old', page_summary: 'kept', page_order: 3 });
  const response = await post(app, { id: page.page, page_usertitle: 'New' });
  assert.equal(response.statusCode, 200, response.body);
  const updated = json(response).data[0];
  assert.equal(updated.page_usertitle, 'New');
  assert.equal(updated.page_summary, 'kept');
  assert.equal(updated.page_order, 3);
  assert.equal(updated.page_alias, 'old', 'an existing alias is not regenerated');
  assert.equal(updated.page_dt_begin, page.page_dt_begin);
});

test('a GET → edit → POST round trip with the system fields is accepted', async (t) => {
  const app = await buildTestApp(t);
  const page = await create(app, { page_usertitle: 'Round trip' });
  const response = await post(app, { ...page, page_summary: 'edited' });
  assert.equal(response.statusCode, 200, response.body);
  assert.equal(json(response).data[0].page_summary, 'edited');
  const clash = await post(app, { ...page, page: page.page + 1 });
  assert.equal(clash.statusCode, 400, 'id and page naming two pages');
});

test('aliases are generated from the title and unique within the website', async (t) => {
  const app = await buildTestApp(t);
  assert.equal((await create(app, { page_usertitle: 'Crème Brûlée!' })).page_alias, 'creme-brulee');
  assert.equal((await create(app, { page_usertitle: 'Crème brûlée' })).page_alias, 'creme-brulee-2');
  assert.equal((await create(app, { page_usertitle: 'creme brulee' })).page_alias, 'creme-brulee-3');
  assert.equal((await create(app, { page_usertitle: '!!!' })).page_alias, 'page');
  const taken = await post(app, { page_usertitle: 'X', page_alias: 'creme-brulee' });
  assert.equal(taken.statusCode, 409, 'an alias sent explicitly is not renamed silently');
  assert.equal(
    json(taken).detail,
    'Another page of this website already has the alias "creme-brulee": choose another page_alias, or send it empty to have one made from the title.',
  );
  const own = await create(app, { page_usertitle: 'Own name' });
  const regenerated = await post(app, { id: own.page, page_alias: '' });
  const again = await post(app, { id: own.page, page_alias: '' });
  assert.equal(json(regenerated).data[0].page_alias, 'own-name', 'a page does not stand in the way of its own alias');
  assert.equal(json(again).data[0].page_alias, 'own-name');
  assert.equal(again.headers.etag, regenerated.headers.etag, 'sending it again changes nothing');
  const other = await app.addSite('Other');
  const elsewhere = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: other.headers,
    payload: { page_usertitle: 'Crème brûlée' },
  });
  assert.equal(json(elsewhere).data[0].page_alias, 'creme-brulee', 'another website has its own aliases');
});

test('each field is validated and every error names its field', async (t) => {
  const app = await buildTestApp(t);
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ page_order: 'first' }, 'page_order'],
    [{ page_order: 1.5 }, 'page_order'],
    [{ page_order: '5' }, 'page_order'],
    [{ page_parent: -1 }, 'page_parent'],
    [{ page_usertitle: 5 }, 'page_usertitle'],
    [{ page_notify: 'not-an-email' }, 'page_notify'],
    [{ page_alttemplate: 'G' }, 'page_alttemplate'],
    [{ page_alttemplate: 'AB' }, 'page_alttemplate'],
    [{ page_thumb_dimensions: '100 by 200' }, 'page_thumb_dimensions'],
    [{ page_crop_aspect: 'yes' }, 'page_crop_aspect'],
    [{ page_crop_aspect: 2 }, 'page_crop_aspect'],
    [{ page_alias: 'a/b' }, 'page_alias'],
    [{ colour: 'red' }, 'colour'],
    [{ id: 'one' }, 'id'],
    [{ page_parent: 99999 }, 'page_parent'],
  ];
  for (const [body, field] of cases) {
    const response = await post(app, body);
    assert.equal(response.statusCode, 400, `${JSON.stringify(body)} → ${response.body}`);
    const problem = json(response);
    assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.equal(problem.status, 400);
    assert.ok(
      problem.errors.some((e: { field: string }) => e.field === field),
      `${JSON.stringify(body)}: ${response.body}`,
    );
  }
  const good = await create(app, {
    page_usertitle: 'Good',
    page_notify: 'owner@example.com',
    page_alttemplate: 'c',
    page_thumb_dimensions: '320x200',
    page_crop_aspect: true,
  });
  assert.equal(good.page_alttemplate, 'C');
  const list = await app.app.inject({ url: '/api/page', headers: app.site.headers });
  assert.equal(json(list).meta.total, 1, 'no refused body wrote anything');
});

test('bodies that are not JSON objects are clear 4xx problems', async (t) => {
  const app = await buildTestApp(t);
  const broken = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...app.site.headers, 'content-type': 'application/json' },
    payload: '{"page_usertitle":',
  });
  assert.equal(broken.statusCode, 400);
  assert.equal(json(broken).title, 'Bad request');
  const array = await post(app, [1, 2]);
  assert.equal(array.statusCode, 400);
  const text = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...app.site.headers, 'content-type': 'text/plain' },
    payload: 'hello',
  });
  assert.equal(text.statusCode, 415);
  assert.equal(text.headers['content-type'], 'application/problem+json; charset=utf-8');
});

test('page_parent may not make a cycle', async (t) => {
  const app = await buildTestApp(t);
  const a = await create(app, { page_usertitle: 'A' });
  const b = await create(app, { page_usertitle: 'B', page_parent: a.page });
  const c = await create(app, { page_usertitle: 'C', page_parent: b.page });
  for (const [id, parent] of [
    [a.page, c.page],
    [a.page, b.page],
    [b.page, c.page],
    [a.page, a.page],
  ]) {
    const response = await post(app, { id, page_parent: parent });
    assert.equal(response.statusCode, 400, `${id} under ${parent}`);
    assert.equal(json(response).errors[0].field, 'page_parent');
    // Each says which parent to choose instead.
    assert.equal(
      json(response).errors[0].message,
      id === parent
        ? 'cannot be the page itself: name another page, or 0 for the top level'
        : `page ${parent} is below page ${id}, so this would make a cycle: choose a parent that is not below it, or move page ${parent} first`,
    );
  }
  const nowhere = await post(app, { page_usertitle: 'D', page_parent: 999_999 });
  assert.deepEqual(json(nowhere).errors, [
    {
      field: 'page_parent',
      message: 'there is no page 999999 on this website: name one of its pages (GET /api/page lists them), or 0 for the top level',
    },
  ]);
  const fine = await post(app, { id: c.page, page_parent: a.page });
  assert.equal(fine.statusCode, 200, 'moving a page up the tree is fine');
  const top = await post(app, { id: b.page, page_parent: 0 });
  assert.equal(top.statusCode, 200);
});

test('a website never sees or changes another website’s pages', async (t) => {
  const app = await buildTestApp(t);
  const mine = await create(app, { page_usertitle: 'Mine' });
  const other = await app.addSite('Other');
  const as = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
    app.app.inject({ method, url, headers: other.headers, ...(payload ? { payload } : {}) });
  assert.equal((await as('GET', `/api/page/${mine.page}`)).statusCode, 404);
  const byId = json(await as('GET', `/api/page?id=${mine.page}`));
  assert.deepEqual([byId.data, byId.meta.total], [[], 0]);
  const empty = json(await as('GET', '/api/page'));
  assert.deepEqual([empty.data, empty.meta.total], [[], 0]);
  assert.equal((await as('POST', '/api/page', { id: mine.page, page_usertitle: 'Stolen' })).statusCode, 404);
  assert.equal((await as('DELETE', `/api/page/${mine.page}`)).statusCode, 404);
  assert.equal(
    (await as('POST', '/api/page', { page_usertitle: 'Child', page_parent: mine.page })).statusCode,
    400,
    'not a parent in this website',
  );
  const still = await app.app.inject({ url: `/api/page/${mine.page}`, headers: app.site.headers });
  assert.equal(json(still).data[0].page_usertitle, 'Mine');
  // Each website's list holds its own rows and no other: the rows, not only their count, by
  // offset and by cursor.
  const theirs = json(await as('POST', '/api/page', { page_usertitle: 'Theirs' })).data[0];
  for (const paging of ['', '&cursor=']) {
    const listOf = async (headers: Record<string, string>) =>
      (json(await app.app.inject({ url: `/api/page?pageSize=999${paging}`, headers })).data as { page: number }[])
        .map((p) => p.page)
        .sort();
    assert.deepEqual(await listOf(other.headers), [theirs.page], paging);
    const ours = await listOf(app.site.headers);
    assert.ok(ours.includes(mine.page) && !ours.includes(theirs.page), `A's list${paging}: ${ours.join(', ')}`);
  }
});

test('DELETE removes a page, refuses one with sub pages, and 404s an unknown one', async (t) => {
  const app = await buildTestApp(t);
  const parent = await create(app, { page_usertitle: 'Parent' });
  const child = await create(app, { page_usertitle: 'Child', page_parent: parent.page });
  const refused = await app.app.inject({ method: 'DELETE', url: `/api/page/${parent.page}`, headers: app.site.headers });
  assert.equal(refused.statusCode, 409);
  assert.match(json(refused).detail, /sub page/);
  const gone = await app.app.inject({ method: 'DELETE', url: `/webapps/api/page/${child.page}`, headers: app.site.headers });
  assert.equal(gone.statusCode, 204);
  assert.equal(gone.body, '');
  assert.equal((await app.app.inject({ url: `/api/page/${child.page}`, headers: app.site.headers })).statusCode, 404);
  assert.equal((await app.app.inject({ method: 'DELETE', url: `/api/page/${child.page}`, headers: app.site.headers })).statusCode, 404);
  assert.equal((await app.app.inject({ method: 'DELETE', url: `/api/page/${parent.page}`, headers: app.site.headers })).statusCode, 204);
  assert.equal(
    (await app.app.inject({ method: 'POST', url: '/api/page', headers: app.site.headers, payload: { id: 424242, page_usertitle: 'x' } }))
      .statusCode,
    404,
  );
});

test('concurrent inserts with one title all succeed with distinct aliases', async (t) => {
  const app = await buildTestApp(t);
  const responses = await Promise.all(Array.from({ length: 6 }, () => post(app, { page_usertitle: 'Same title' })));
  assert.deepEqual(
    responses.map((r) => r.statusCode),
    Array(6).fill(201),
  );
  const aliases = responses.map((r) => json(r).data[0].page_alias).sort();
  assert.deepEqual(aliases, ['same-title', 'same-title-2', 'same-title-3', 'same-title-4', 'same-title-5', 'same-title-6']);
});

test('a body that names two pages is a 400 that says to send one of them', async (t) => {
  const app = await buildTestApp(t);
  const a = await create(app, { page_usertitle: 'A' });
  const clash = await post(app, { id: a.page, page: a.page + 1, page_usertitle: 'Which?' });
  assert.equal(clash.statusCode, 400);
  assert.equal(
    json(clash).detail,
    `The body names two pages: id ${a.page} and page ${a.page + 1}. Send the page to update in one of them, or both with the same number.`,
  );
  assert.equal((await post(app, { id: a.page, page: a.page, page_usertitle: 'Same' })).statusCode, 200);
});
