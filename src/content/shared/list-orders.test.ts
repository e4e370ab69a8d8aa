/**
 * The list orders a client can choose (orderBy, orderDirection), on pages and blogs alike: each
 * is the order its description says, offset and cursor paging agree in it, a walk survives
 * inserts and deletes, its cursors are its own, and every order is read from its index.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { type BlogTestApp, buildBlogApp } from '../../../test/blog-fixtures.js';
import { idsByCursor, idsByOffset, type ListAnswer } from '../../../test/cursor-walk.js';
import { json } from '../../../test/helpers.js';
import { assertOffsetWindows, assertWindowPlan } from '../../../test/offset-windows.js';
import { planOf, recording } from '../../../test/query-plan.js';
import type { Config } from '../../config.js';
import { BLOGS } from '../blogs/blog.repository.js';
import { PAGES } from '../pages/page.repository.js';
import { listRows, listRowsAfter } from './stored-lists.js';
import { type OrderDirection, sortOrder } from './stored-resource.js';

type Item = Record<string, unknown> & { id: number };
type Resource = typeof PAGES | typeof BLOGS;

interface Kind {
  readonly path: 'page' | 'blog';
  readonly r: Resource;
  readonly titleField: string;
  /** The body of the i-th record of the seed: titles that differ in case and accents only, many ties. */
  body(app: BlogTestApp, i: number): Record<string, unknown>;
}

const TITLES = ['b', 'Á', 'a', 'C', 'ä', ' Zebra', 'élan', 'B', '', 'Ölig', 'a', 'zèbre'];

function day(i: number): string {
  return `2024-0${1 + (i % 3)}-1${i % 4}`;
}

const KINDS: readonly Kind[] = [
  {
    path: 'page',
    r: PAGES,
    titleField: 'page_usertitle',
    body: (_, i) => ({
      page_usertitle: TITLES[i % TITLES.length],
      page_menuname: TITLES[(i * 5) % TITLES.length]!.toUpperCase(),
      page_order: [3, 1, 1, 0, 2, 3][i % 6],
    }),
  },
  {
    path: 'blog',
    r: BLOGS,
    titleField: 'info_title',
    body: (app, i) => ({ page: app.pageId, info_title: TITLES[i % TITLES.length], info_order: [0, 1, 1, 2][i % 4], info_date: day(i) }),
  },
];

async function post(app: BlogTestApp, kind: Kind, body: Record<string, unknown>): Promise<Item> {
  // A new record needs its title; an empty one, which sorts first, is given by an update.
  const untitled = body[kind.titleField] === '';
  const created = { ...body, ...(untitled ? { [kind.titleField]: 'placeholder' } : {}) };
  const response = await app.app.inject({ method: 'POST', url: `/api/${kind.path}`, headers: app.site.headers, payload: created });
  assert.equal(response.statusCode, 201, response.body);
  const record = json(response).data[0];
  if (!untitled) return record;
  const url = `/api/${kind.path}/${record.id ?? record.info_id}`;
  const updated = await app.app.inject({ method: 'PATCH', url, headers: app.site.headers, payload: { [kind.titleField]: '' } });
  assert.equal(updated.statusCode, 200, updated.body);
  return json(updated).data[0];
}

async function list(app: BlogTestApp, kind: Kind, query: string) {
  const response = await app.app.inject({ url: `/api/${kind.path}?${query}`, headers: app.site.headers });
  assert.equal(response.statusCode, 200, `${query}: ${response.body}`);
  return json(response) as { data: Item[]; meta: Record<string, unknown> };
}

const answer =
  (app: BlogTestApp, kind: Kind): ListAnswer =>
  async (query) => {
    const body = await list(app, kind, query);
    return { ids: body.data.map((item) => item.id), meta: body.meta };
  };

async function seed(app: BlogTestApp, kind: Kind, count = 24): Promise<Item[]> {
  const made: Item[] = [];
  for (let i = 0; i < count; i++) made.push(await post(app, kind, kind.body(app, i)));
  return made;
}

/** The app seen from a new website of its own, holding nothing but a page for blogs when the kind is blogs. */
async function ownSite(app: BlogTestApp, kind: Kind): Promise<BlogTestApp> {
  const site = await app.addSite();
  if (kind.path === 'page') return { ...app, site, pageId: 0 };
  const page = await app.app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'Blog' } });
  assert.equal(page.statusCode, 201, page.body);
  return { ...app, site, pageId: json(page).data[0].page };
}

/** The ids in the order the description says, worked out here from the records themselves. */
function expectedOrder(kind: Kind, records: Item[], orderBy: string, direction?: OrderDirection): number[] {
  const { columns } = sortOrder(kind.r, orderBy, direction);
  const keyOf = (record: Item) => {
    const keys = kind.r.sortKeys(record as never);
    return columns.map((c) => (c.column in keys ? keys[c.column] : record[c.column]) as string | number);
  };
  const compare = (a: Item, b: Item) => {
    const [ka, kb] = [keyOf(a), keyOf(b)];
    for (const [i, c] of columns.entries()) {
      if (ka[i] === kb[i]) continue;
      return (ka[i]! < kb[i]! ? -1 : 1) * (c.desc ? -1 : 1);
    }
    return 0;
  };
  return [...records].sort(compare).map((r) => r.id);
}

/** The app without a request quota: these tests send thousands of requests. */
const build = (t: TestContext) => buildBlogApp(t, { rateLimits: { api: 0, token: 0 } } as Partial<Config>);

const DIRECTIONS = [undefined, 'asc', 'desc', 'reverse'] as const;
const query = (orderBy: string, direction?: string) => `orderBy=${orderBy}${direction ? `&orderDirection=${direction}` : ''}`;

for (const kind of KINDS) {
  test(`${kind.path}s: every order and direction is the described order, by offset and by cursor alike`, async (t) => {
    const app = await build(t);
    await seed(app, kind);
    const records = (await list(app, kind, 'pageSize=999')).data;
    for (const orderBy of Object.keys(kind.r.orders)) {
      for (const direction of DIRECTIONS) {
        const filters = query(orderBy, direction);
        const all = await idsByOffset(answer(app, kind), filters);
        assert.deepEqual(all, expectedOrder(kind, records, orderBy, direction), filters);
        for (const size of [1, 5, 7])
          assert.deepEqual(await idsByCursor(answer(app, kind), size, filters), all, `${filters} pageSize=${size}`);
      }
      // asc and desc name the first column's direction; reverse is the default backwards.
      const byDefault = await idsByOffset(answer(app, kind), query(orderBy));
      const reversed = await idsByOffset(answer(app, kind), query(orderBy, 'reverse'));
      assert.deepEqual(reversed, [...byDefault].reverse(), `${orderBy}: reverse`);
      const firstDesc = kind.r.orders[orderBy]!.columns[0]!.desc === true;
      assert.deepEqual(await idsByOffset(answer(app, kind), query(orderBy, firstDesc ? 'desc' : 'asc')), byDefault, `${orderBy}: default`);
    }
    // Without orderBy, the list is exactly what it always was.
    assert.deepEqual(await idsByOffset(answer(app, kind)), expectedOrder(kind, records, 'order'));
  });

  test(`${kind.path}s: titles sort ignoring case and accents, ties by id, the same on every database`, async (t) => {
    const app = await build(t);
    for (const title of TITLES) await post(app, kind, { ...kind.body(app, 0), [kind.titleField]: title });
    // The blog app's own page (titled Blog) is left out of the page lists.
    const titles = async (q: string) =>
      (await list(app, kind, q)).data.filter((item) => kind.path === 'blog' || item.id !== app.pageId).map((item) => item[kind.titleField]);
    const ascending = ['', 'Á', 'a', 'ä', 'a', 'b', 'B', 'C', 'élan', 'Ölig', ' Zebra', 'zèbre'];
    assert.deepEqual(await titles('orderBy=title&pageSize=999'), ascending);
    assert.deepEqual(await titles('orderBy=title&orderDirection=desc&pageSize=999'), [...ascending].reverse());
  });

  test(`${kind.path}s: a walk in every order survives inserts and deletes between its pages`, async (t) => {
    const built = await build(t);
    for (const orderBy of Object.keys(kind.r.orders)) {
      for (const direction of ['asc', 'desc'] as const) {
        // Each walk in a website of its own, so that it sees only its own records.
        const app = await ownSite(built, kind);
        const made = await seed(app, kind, 16);
        const filters = query(orderBy, direction);
        const before = await idsByOffset(answer(app, kind), filters);
        const deleted = new Set<number>();
        const inserted: number[] = [];
        const walked = await idsByCursor(answer(app, kind), 3, filters, async (step) => {
          if (step > 2) return;
          for (let i = 0; i < 4; i++) inserted.push((await post(app, kind, kind.body(app, step * 7 + i))).id);
          for (const victim of [made[step]!, made[made.length - 1 - step]!, made[6 + step]!]) {
            const response = await app.app.inject({ method: 'DELETE', url: `/api/${kind.path}/${victim.id}`, headers: app.site.headers });
            assert.equal(response.statusCode, 204, response.body);
            deleted.add(victim.id);
          }
        });
        assert.equal(new Set(walked).size, walked.length, `${filters}: nothing twice`);
        const stayed = before.filter((id) => !deleted.has(id));
        assert.deepEqual(
          walked.filter((id) => stayed.includes(id)),
          stayed,
          `${filters}: every record that stayed, once, in order`,
        );
        assert.ok(
          walked.every((id) => before.includes(id) || inserted.includes(id)),
          `${filters}: nothing else`,
        );
        const after = await idsByOffset(answer(app, kind), filters);
        assert.deepEqual(
          after.filter((id) => walked.includes(id)),
          walked.filter((id) => after.includes(id)),
          `${filters}: the walk is in list order`,
        );
      }
    }
  });

  test(`${kind.path}s: a cursor belongs to its order and direction; another one's is a 400 naming cursor`, async (t) => {
    const app = await build(t);
    await seed(app, kind, 6);
    const views = Object.keys(kind.r.orders).flatMap((orderBy) => [query(orderBy, 'asc'), query(orderBy, 'desc')]);
    const cursors = new Map<string, string>();
    for (const view of views) {
      const { meta } = await list(app, kind, `pageSize=2&cursor=&${view}`);
      cursors.set(view, meta.nextCursor as string);
    }
    assert.equal(new Set(cursors.values()).size, views.length, 'every order and direction gives cursors of its own');
    for (const [from, cursor] of cursors) {
      for (const to of views) {
        const response = await app.app.inject({ url: `/api/${kind.path}?pageSize=2&cursor=${cursor}&${to}`, headers: app.site.headers });
        if (from === to) {
          assert.equal(response.statusCode, 200, `${from}: ${response.body}`);
          continue;
        }
        // The default order asked for by name is the default order.
        const defaults = [query('order', 'asc'), ''];
        if (defaults.includes(from) && defaults.includes(to)) continue;
        assert.equal(response.statusCode, 400, `${from} sent with ${to}: ${response.body}`);
        assert.deepEqual(
          json(response).errors.map((e: { field: string }) => e.field),
          ['cursor'],
        );
        assert.match(json(response).errors[0].message, /orderBy or orderDirection/);
      }
    }
    // A cursor of the default order (as given out before orders could be chosen) still works with it.
    const plain = (await list(app, kind, 'pageSize=2&cursor=')).meta.nextCursor as string;
    assert.equal(plain, cursors.get(query('order', 'asc')));
    await list(app, kind, `pageSize=2&cursor=${plain}&orderBy=order&orderDirection=asc`);
  });

  test(`${kind.path}s: an unknown orderBy or orderDirection is a 400 that lists the allowed values`, async (t) => {
    const app = await build(t);
    for (const [q, field, allowed] of [
      ['orderBy=name', 'orderBy', Object.keys(kind.r.orders)],
      ['orderBy=Title', 'orderBy', Object.keys(kind.r.orders)],
      ['orderDirection=up', 'orderDirection', ['asc', 'desc', 'reverse']],
      ['orderBy=title&orderDirection=DESC', 'orderDirection', ['asc', 'desc', 'reverse']],
    ] as const) {
      const response = await app.app.inject({ url: `/api/${kind.path}?${q}`, headers: app.site.headers });
      assert.equal(response.statusCode, 400, q);
      assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
      const errors = json(response).errors as { field: string; message: string }[];
      assert.deepEqual(
        errors.map((e) => e.field),
        [field],
        q,
      );
      assert.equal(errors[0]!.message, `must be one of: ${allowed.map((a) => `"${a}"`).join(', ')}`, q);
    }
  });

  test(`${kind.path}s: every order is read from its index, forwards or backwards, never sorted (query plan)`, async (t) => {
    const app = await build(t);
    await seed(app, kind, 30);
    const siteId = app.site.siteId;
    for (const orderBy of Object.keys(kind.r.orders)) {
      for (const direction of ['asc', 'desc'] as const) {
        const order = sortOrder(kind.r, orderBy, direction);
        const label = `${orderBy} ${direction}`;
        const first = await listRowsAfter(app.db.kysely, kind.r, siteId, {}, null, 4, order);
        assert.ok(first.next, label);
        const { handle, queries } = recording(app.db);
        const second = await listRowsAfter(handle, kind.r, siteId, {}, first.next, 4, order);
        assert.equal(second.rows.length, 4, label);
        assert.ok(queries.length >= 1, label);
        // A range of the blogs' default order that fixes info_order and info_date is served in order by
        // blogs_site_id as well, which PostgreSQL costs the same on a table this small.
        const indexes =
          orderBy === 'order' && kind.path === 'blog' && app.db.dialect === 'postgres' ? [order.index, 'blogs_site_id'] : [order.index];
        for (const q of queries) assertIndexPlan((await planOf(app.db, q)).join('\n'), app.db.dialect, kind.r.table, indexes, label);

        const windows = recording(app.db);
        await listRows(windows.handle, kind.r, siteId, {}, 10, 5, order);
        const plan = (await planOf(app.db, windows.queries.find((q) => q.sql.includes('record_json'))!)).join('\n');
        assertWindowPlan(plan, app.db.dialect, kind.r.table, kind.r.id, order.index);
      }
    }
  });

  test(`${kind.path}s: offset windows are slices of the chosen order`, async (t) => {
    const app = await build(t);
    await seed(app, kind);
    await assertOffsetWindows(
      async (q) => {
        const body = await list(app, kind, q);
        return { ids: body.data.map((item) => item.id), total: body.meta.total };
      },
      Object.keys(kind.r.orders).flatMap((orderBy) => [query(orderBy), query(orderBy, 'reverse'), `${query(orderBy)}&title=%25a%25`]),
    );
  });
}

/** A keyset query's plan: a search of the order's index, and no sort (no temporary B-tree, no Sort node). */
function assertIndexPlan(plan: string, dialect: 'sqlite' | 'postgres', table: string, indexes: readonly string[], label: string): void {
  const index = `(${indexes.join('|')})`;
  if (dialect === 'sqlite') {
    assert.match(plan, new RegExp(`^SEARCH ${table} USING (COVERING )?INDEX ${index} \\(site_id=\\?`), `${label}: ${plan}`);
  } else {
    assert.match(plan, new RegExp(`Index (Only )?Scan (Backward )?using ${index} on ${table}`), `${label}: ${plan}`);
  }
  assert.doesNotMatch(plan, /TEMP B-TREE|Sort/, `${label}: ${plan}`);
}
