import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type BlogTestApp, buildBlogApp } from '../../../test/blog-fixtures.js';
import { idsByCursor, idsByOffset, type ListAnswer } from '../../../test/cursor-walk.js';
import { json } from '../../../test/helpers.js';
import { assertOffsetWindows, assertWindowPlan } from '../../../test/offset-windows.js';
import { planOf, recording } from '../../../test/query-plan.js';
import { now } from '../../db/time.js';
import { listRows, listRowsAfter } from '../shared/stored-lists.js';
import { BLOGS } from './blog.repository.js';

type Blog = Record<string, unknown> & { info_id: number; info_title: string };

function day(offset: number): string {
  const d = new Date(`${now().slice(0, 10)}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + offset);
  return d.toISOString().slice(0, 10);
}

async function post(t: BlogTestApp, body: Record<string, unknown>): Promise<Blog> {
  const response = await t.app.inject({ method: 'POST', url: '/api/blog', headers: t.site.headers, payload: { page: t.pageId, ...body } });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

async function list(t: BlogTestApp, query: string) {
  const response = await t.app.inject({ url: `/api/blog?${query}`, headers: t.site.headers });
  assert.equal(response.statusCode, 200, `${query}: ${response.body}`);
  return json(response) as { data: Blog[]; meta: Record<string, unknown> };
}

const ids =
  (t: BlogTestApp): ListAnswer =>
  async (query) => {
    const body = await list(t, query);
    return { ids: body.data.map((b) => b.info_id), meta: body.meta };
  };
const byOffset = (t: BlogTestApp, filters = '') => idsByOffset(ids(t), filters);
const byCursor = (t: BlogTestApp, pageSize: number, filters = '', between?: (step: number) => Promise<void>) =>
  idsByCursor(ids(t), pageSize, filters, between);

/** 24 blogs with ties in info_order, in info_date (empty dates too) and in both. */
async function seedTies(t: BlogTestApp): Promise<Blog[]> {
  const made: Blog[] = [];
  const orders = [0, 1, 0, 0, 2, 1, 0, 0, 1, 2, 0, 0];
  const dates = [-3, -3, -1, '', -3, -1, -7, -1, '', -3, 5, -3];
  for (let i = 0; i < 24; i++) {
    const date = dates[i % dates.length]!;
    made.push(
      await post(t, {
        info_title: `B${i} ${i % 3 === 0 ? 'alpha' : 'beta'}`,
        info_order: orders[(i * 5) % orders.length],
        info_date: date === '' ? '' : day(date as number),
        info_show: i % 7 === 0 ? 'N' : 'Y',
      }),
    );
  }
  return made;
}

test('walking blogs by cursor gives every blog once, in offset order, ties included', async (t) => {
  const app = await buildBlogApp(t);
  await seedTies(app);
  const all = await byOffset(app);
  assert.equal(all.length, 24);
  for (const size of [1, 2, 5, 23, 24, 999]) assert.deepEqual(await byCursor(app, size), all, `pageSize=${size}`);
});

test('blog filters and publicContentOnly combine with cursor paging', async (t) => {
  const app = await buildBlogApp(t);
  await seedTies(app);
  for (const filters of ['title=%25alpha', 'publicContentOnly=true', 'publicContentOnly=1&title=%25beta', `page=${app.pageId}`]) {
    const expected = await byOffset(app, filters);
    assert.ok(expected.length > 0, filters);
    for (const size of [1, 3]) assert.deepEqual(await byCursor(app, size, filters), expected, `${filters}, pageSize=${size}`);
  }
  assert.deepEqual(await list(app, 'cursor=&title=nothing'), { data: [], meta: { pageSize: 200, nextCursor: null } });
});

test('blogs inserted and deleted between two pages neither repeat nor skip the blogs that stay', async (t) => {
  const app = await buildBlogApp(t);
  const made = await seedTies(app);
  const before = await byOffset(app);
  const deleted = new Set<number>();
  const walked = await byCursor(app, 5, '', async (step) => {
    if (step > 2) return;
    for (const [order, date] of [
      [0, -3],
      [0, -1],
      [1, ''],
      [2, -30],
    ] as const) {
      await post(app, { info_title: `New ${step}`, info_order: order, info_date: date === '' ? '' : day(date) });
    }
    for (const victim of [made[step]!, made[made.length - 1 - step]!]) {
      const response = await app.app.inject({ method: 'DELETE', url: `/api/blog/${victim.info_id}`, headers: app.site.headers });
      assert.equal(response.statusCode, 204, response.body);
      deleted.add(victim.info_id);
    }
  });
  assert.equal(new Set(walked).size, walked.length, 'no blog twice');
  const stayed = before.filter((id) => !deleted.has(id));
  assert.deepEqual(
    walked.filter((id) => stayed.includes(id)),
    stayed,
    'every blog that stayed, once, in order',
  );
  const after = await byOffset(app);
  assert.deepEqual(
    after.filter((id) => walked.includes(id)),
    walked.filter((id) => after.includes(id)),
    'the walk is in list order',
  );
});

test('a page cursor, a bad cursor or cursor with offset is a 400 on the blog list', async (t) => {
  const app = await buildBlogApp(t);
  await post(app, { info_title: 'One' });
  const encoded = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  await app.app.inject({ method: 'POST', url: '/api/page', headers: app.site.headers, payload: { page_usertitle: 'Second' } });
  const pageCursor = json(await app.app.inject({ url: '/api/page?cursor=&pageSize=1', headers: app.site.headers })).meta.nextCursor;
  assert.equal(typeof pageCursor, 'string', 'the site has two pages');
  for (const cursor of [
    pageCursor,
    encoded(['b', 0, 5, 1]),
    encoded(['b', 0, '2024-01-01']),
    encoded(['b', 0, 'x\u0000', 1]),
    encoded(['b', 0, '\ud800', 1]),
    encoded(['b', 0, 'x'.repeat(129), 1]),
    encoded(['b', -2147483649, '', 1]),
    '!!',
  ]) {
    const response = await app.app.inject({ url: `/api/blog?cursor=${encodeURIComponent(cursor)}`, headers: app.site.headers });
    assert.equal(response.statusCode, 400, `${cursor}: ${response.body}`);
    assert.deepEqual(
      json(response).errors.map((e: { field: string }) => e.field),
      ['cursor'],
    );
  }
  const both = await app.app.inject({ url: '/api/blog?cursor=&offset=1', headers: app.site.headers });
  assert.equal(both.statusCode, 400);
  assert.deepEqual(
    json(both)
      .errors.map((e: { field: string }) => e.field)
      .sort(),
    ['cursor', 'offset'],
  );
  // Any text key a blog may hold is accepted back (dates, empty, or something older data holds).
  for (const date of ['', '2024-02-30', 'späť']) {
    assert.deepEqual((await list(app, `cursor=${encoded(['b', 0, date, 2147483647])}`)).meta.nextCursor, null);
  }
});

test('the blog keyset query reads three ranges of blogs_site_order, with no sort (query plan)', async (t) => {
  const app = await buildBlogApp(t);
  await seedTies(app);
  const { handle, queries } = recording(app.db);
  // A page large enough to need all three ranges after the key.
  const all = await byOffset(app);
  const { rows } = await listRowsAfter(handle, BLOGS, app.site.siteId, {}, [0, day(-3), 1], 999);
  assert.ok(rows.length > 0 && rows.length < all.length);
  const bounds =
    app.db.dialect === 'sqlite'
      ? [
          'site_id=? AND info_order=? AND info_date=? AND info_id>?',
          'site_id=? AND info_order=? AND info_date<?',
          'site_id=? AND info_order>?',
        ]
      : [
          `(site_id = ${app.site.siteId}) AND (info_order = 0) AND (info_date = '${day(-3)}'::text) AND (info_id > 1)`,
          `(site_id = ${app.site.siteId}) AND (info_order = 0) AND (info_date < '${day(-3)}'::text)`,
          `(site_id = ${app.site.siteId}) AND (info_order > 0)`,
        ];
  assert.equal(queries.length, bounds.length, 'one query per range, no count');
  for (const [i, query] of queries.entries()) {
    const plan = await planOf(app.db, query);
    if (app.db.dialect === 'sqlite') {
      assert.deepEqual(plan, [`SEARCH blogs USING INDEX blogs_site_order (${bounds[i]})`], `range ${i}`);
    } else if (i === 0 && plan.join('\n').includes('blogs_site_id')) {
      // The first range fixes info_order and info_date, so blogs_site_id (site_id, info_id) also
      // serves it in order; on a table this small PostgreSQL costs both indexes the same.
      assert.match(plan.join('\n'), /Index (Only )?Scan using blogs_site_id on blogs/, `range ${i}`);
      assert.doesNotMatch(plan.join('\n'), /Sort/, `range ${i}`);
    } else {
      assert.match(plan.join('\n'), /Index (Only )?Scan using blogs_site_order on blogs/, `range ${i}`);
      assert.ok(plan.includes(`Index Cond: (${bounds[i]})`), `range ${i}: ${plan.join('\n')}`);
      assert.doesNotMatch(plan.join('\n'), /Sort|Filter/, `range ${i}`);
    }
  }
});

test('a blog offset window is the same slice of the list on every database; PostgreSQL reads its keys by index first (query plan)', async (t) => {
  const app = await buildBlogApp(t);
  await seedTies(app);
  await assertOffsetWindows(
    async (query) => {
      const body = await list(app, query);
      return { ids: body.data.map((b) => b.info_id), total: body.meta.total };
    },
    ['', 'title=%25alpha', 'publicContentOnly=true'],
  );
  const { handle, queries } = recording(app.db);
  await listRows(handle, BLOGS, app.site.siteId, {}, 10, 5);
  const plan = await planOf(app.db, queries.find((q) => q.sql.includes('record_json'))!);
  assertWindowPlan(plan.join('\n'), app.db.dialect, 'blogs', 'info_id');
});
