import assert from 'node:assert/strict';
import { test } from 'node:test';
import { idsByCursor, idsByOffset, type ListAnswer } from '../../../test/cursor-walk.js';
import { buildTestApp, json, type TestApp } from '../../../test/helpers.js';
import { assertOffsetWindows, assertWindowPlan } from '../../../test/offset-windows.js';
import { planOf, recording } from '../../../test/query-plan.js';
import { CURSOR_MAX } from '../shared/cursor.js';
import { listRows, listRowsAfter } from '../shared/stored-lists.js';
import { PAGES } from './page.repository.js';

type Page = Record<string, unknown> & { page: number; page_usertitle: string };

async function post(t: TestApp, body: Record<string, unknown>): Promise<Page> {
  const response = await t.app.inject({ method: 'POST', url: '/api/page', headers: t.site.headers, payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

async function list(t: TestApp, query: string) {
  const response = await t.app.inject({ url: `/api/page?${query}`, headers: t.site.headers });
  assert.equal(response.statusCode, 200, `${query}: ${response.body}`);
  return json(response) as { data: Page[]; meta: Record<string, unknown> };
}

const ids =
  (t: TestApp): ListAnswer =>
  async (query) => {
    const body = await list(t, query);
    return { ids: body.data.map((p) => p.page), meta: body.meta };
  };
const byOffset = (t: TestApp, filters = '') => idsByOffset(ids(t), filters);
const byCursor = (t: TestApp, pageSize: number, filters = '', between?: (step: number) => Promise<void>) =>
  idsByCursor(ids(t), pageSize, filters, between);

/** 23 pages with many ties in page_order (the id decides among them), inserted out of order. */
async function seedTies(t: TestApp): Promise<Page[]> {
  const made: Page[] = [];
  const orders = [3, 1, 1, 0, 2, 3, 3, 1, 0, 5, 2, 2, 1, 0, 4, 3, 1, 1, 2, 0, 5, 5, -1];
  for (const [i, order] of orders.entries()) {
    made.push(await post(t, { page_usertitle: `P${i} ${i % 3 === 0 ? 'alpha' : 'beta'}`, page_order: order }));
  }
  return made;
}

test('walking by cursor gives every page once, in offset order, for any pageSize', async (t) => {
  const app = await buildTestApp(t);
  await seedTies(app);
  const all = await byOffset(app);
  assert.equal(all.length, 23);
  for (const size of [1, 2, 3, 7, 22, 23, 24, 999]) {
    assert.deepEqual(await byCursor(app, size), all, `pageSize=${size}`);
  }
});

test('the last page has nextCursor null, also when it is full or nothing matches', async (t) => {
  const app = await buildTestApp(t);
  for (let i = 1; i <= 4; i++) await post(app, { page_usertitle: `P${i}`, page_order: i });
  const first = await list(app, 'pageSize=2&cursor=');
  assert.deepEqual(
    first.data.map((p) => p.page_usertitle),
    ['P1', 'P2'],
  );
  assert.equal(typeof first.meta.nextCursor, 'string');
  const second = await list(app, `pageSize=2&cursor=${first.meta.nextCursor}`);
  assert.deepEqual(
    second.data.map((p) => p.page_usertitle),
    ['P3', 'P4'],
  );
  assert.deepEqual(second.meta, { pageSize: 2, nextCursor: null }, 'four records, two pages of two: no third page');
  assert.deepEqual(await list(app, 'cursor=&title=nothing'), { data: [], meta: { pageSize: 200, nextCursor: null } });
  assert.deepEqual((await list(app, 'cursor=&pageSize=abc')).meta, { pageSize: 200, nextCursor: null }, 'pageSize rules as with offset');
  // Without cursor, the answer is what it always was.
  assert.deepEqual((await list(app, 'pageSize=2')).meta, { total: 4, offset: 0, pageSize: 2 });
});

test('filters and publicContentOnly combine with cursor paging', async (t) => {
  const app = await buildTestApp(t);
  const made = await seedTies(app);
  const members = await post(app, { page_usertitle: 'Members alpha', page_order: 1, page_privacy: 1 });
  for (let i = 0; i < 4; i++) await post(app, { page_usertitle: `Inside alpha ${i}`, page_parent: members.page, page_order: i % 2 });
  for (const filters of [
    'title=%25alpha',
    'title=beta&matchType=endsWith',
    'publicContentOnly=true',
    'publicContentOnly=1&title=%25alpha%25',
    `parent=${members.page}`,
    `id=${made[4]!.page}`,
    'keywords=alpha',
  ]) {
    const expected = await byOffset(app, filters);
    assert.ok(expected.length > 0, filters);
    for (const size of [1, 2, 5]) assert.deepEqual(await byCursor(app, size, filters), expected, `${filters}, pageSize=${size}`);
  }
  const hidden = (await byCursor(app, 3, 'publicContentOnly=true')).filter((id) => id === members.page);
  assert.deepEqual(hidden, [], 'a member-only page never shows in a public walk');
});

test('inserts and deletes between two pages neither repeat nor skip the pages that stay', async (t) => {
  const app = await buildTestApp(t);
  const made = await seedTies(app);
  const before = await byOffset(app);
  const deleted = new Set<number>();
  const inserted: number[] = [];
  const walked = await byCursor(app, 4, '', async (step) => {
    if (step > 2) return;
    // Somewhere behind the cursor, somewhere ahead of it, and on the ties at its place.
    for (const order of [-5, 0, 2, 3, 9])
      inserted.push((await post(app, { page_usertitle: `New ${step} ${order}`, page_order: order })).page);
    for (const victim of [made[step]!, made[made.length - 1 - step]!, made[8 + step]!]) {
      const response = await app.app.inject({ method: 'DELETE', url: `/api/page/${victim.page}`, headers: app.site.headers });
      assert.equal(response.statusCode, 204, response.body);
      deleted.add(victim.page);
    }
  });
  assert.equal(new Set(walked).size, walked.length, 'no page twice');
  const stayed = before.filter((id) => !deleted.has(id));
  assert.deepEqual(
    walked.filter((id) => stayed.includes(id)),
    stayed,
    'every page that stayed, once, in order',
  );
  assert.ok(
    walked.every((id) => before.includes(id) || inserted.includes(id)),
    'nothing else',
  );
  const after = await byOffset(app);
  assert.deepEqual(
    after.filter((id) => walked.includes(id)),
    walked.filter((id) => after.includes(id)),
    'the walk is in list order',
  );
});

test('bad cursors, and cursor with offset, are 400 problems naming them', async (t) => {
  const app = await buildTestApp(t);
  await post(app, { page_usertitle: 'One' });
  const encoded = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
  const bad = [
    'not a cursor!',
    '%2B%2F%3D',
    'AAAA',
    encoded('not json'),
    encoded({ p: 1 }),
    encoded(['p', 1]),
    encoded(['p', 1, 2, 3]),
    encoded(['p', '1', 2]),
    encoded(['p', 1.5, 2]),
    encoded(['p', 1, 2147483648]),
    encoded(['p', null, 2]),
    encoded(['b', 0, '2024-01-01', 3]),
    encoded(['x', 0, 1]),
    'a'.repeat(CURSOR_MAX + 1),
  ];
  for (const cursor of bad) {
    const response = await app.app.inject({ url: `/api/page?cursor=${cursor}`, headers: app.site.headers });
    assert.equal(response.statusCode, 400, `${cursor}: ${response.body}`);
    assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.deepEqual(
      json(response).errors.map((e: { field: string }) => e.field),
      ['cursor'],
      cursor,
    );
  }
  for (const query of ['cursor=&offset=0', `cursor=${encoded(['p', 0, 1])}&offset=5`]) {
    const response = await app.app.inject({ url: `/webapps/api/page?${query}`, headers: app.site.headers });
    assert.equal(response.statusCode, 400, query);
    assert.deepEqual(
      json(response)
        .errors.map((e: { field: string }) => e.field)
        .sort(),
      ['cursor', 'offset'],
    );
  }
  // A blog list's cursor says to send it back to the list, in the order, that gave it.
  const blogs = await app.app.inject({ url: `/api/page?cursor=${encoded(['b', 0, '2024-01-01', 3])}`, headers: app.site.headers });
  assert.match(
    json(blogs).errors[0].message,
    /^is a cursor of another list.*: send the orderBy and orderDirection of the request that gave it/,
  );
  // A well-formed cursor past the end is simply an empty last page.
  assert.deepEqual((await list(app, `cursor=${encoded(['p', 2147483647, 2147483647])}`)).data, []);
});

test('the keyset query reads a range of pages_site_order, with no sort (query plan)', async (t) => {
  const app = await buildTestApp(t);
  for (let i = 0; i < 30; i++) await post(app, { page_usertitle: `P${i}`, page_order: i % 4 });
  const { handle, queries } = recording(app.db);
  const { rows, next } = await listRowsAfter(handle, PAGES, app.site.siteId, {}, [1, 5], 3);
  assert.equal(rows.length, 3);
  assert.ok(next);
  assert.equal(queries.length, 1, 'one query, no count');
  const plan = await planOf(app.db, queries[0]!);
  if (app.db.dialect === 'sqlite') {
    assert.deepEqual(plan, ['SEARCH pages USING INDEX pages_site_order (site_id=? AND page_order>?)']);
  } else {
    assert.match(plan.join('\n'), /Index (Only )?Scan using pages_site_order on pages/);
    assert.ok(plan.includes(`Index Cond: ((site_id = ${app.site.siteId}) AND (ROW(page_order, page) > ROW(1, 5)))`), plan.join('\n'));
    assert.doesNotMatch(plan.join('\n'), /Sort/);
  }
});

test('an offset window is the same slice of the list on every database; PostgreSQL reads its keys by index first (query plan)', async (t) => {
  const app = await buildTestApp(t);
  await seedTies(app);
  await assertOffsetWindows(
    async (query) => {
      const body = await list(app, query);
      return { ids: body.data.map((p) => p.page), total: body.meta.total };
    },
    ['', 'title=%25alpha', 'publicContentOnly=true'],
  );
  const { handle, queries } = recording(app.db);
  await listRows(handle, PAGES, app.site.siteId, {}, 10, 5);
  const plan = await planOf(app.db, queries.find((q) => q.sql.includes('record_json'))!);
  assertWindowPlan(plan.join('\n'), app.db.dialect, 'pages', 'page');
});
