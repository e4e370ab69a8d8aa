import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CompiledQuery, sql } from 'kysely';
import { type BlogTestApp, buildBlogApp } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';
import { planOf, recording } from '../../../test/query-plan.js';
import { foldText } from '../../db/text-fold.js';
import { BLOGS } from '../blogs/blog.repository.js';
import { PAGES } from '../pages/page.repository.js';
import { likePattern, literalRuns } from './filters.js';
import { KeptLists, keptListsOf } from './kept-lists.js';
import type { MatchType } from './schemas.js';
import { listRows } from './stored-lists.js';

/**
 * The text filters narrowed by the trigram indexes (migration 0022) must answer exactly what
 * reading every row answers. The expectation is computed here from the rows' columns, with LIKE's
 * rules written out in JavaScript, so an index that misses a row or is out of step shows.
 */

/** A folded LIKE pattern (with `escape '\'`) as a regular expression: % any text, _ one character. */
function likeRegex(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charAt(i);
    if (c === '\\' && i + 1 < pattern.length) source += escapeRegex(pattern.charAt(++i));
    else if (c === '%') source += '[\\s\\S]*';
    else if (c === '_') source += '[\\s\\S]';
    else source += escapeRegex(c);
  }
  return new RegExp(`^${source}$`, 'u');
}

const escapeRegex = (c: string) => c.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

const textMatch = (text: string, value: string, matchType: MatchType) =>
  likeRegex(foldText(likePattern(value, matchType))).test(foldText(text));

function listMatch(list: string, value: string, matchType: MatchType): boolean {
  const normalised = `,${foldText(list).replaceAll(', ', ',').replaceAll(' ,', ',')},`;
  return likeRegex(foldText(`%,${likePattern(value, matchType)},%`)).test(normalised);
}

const MATCH_TYPES: readonly MatchType[] = ['like', 'exact', 'contains', 'startsWith', 'endsWith'];

type Row = Record<string, string | number>;

interface Filter {
  readonly param: string;
  matches(row: Row, value: string, matchType: MatchType): boolean;
}

const PAGE_FILTERS: readonly Filter[] = [
  { param: 'title', matches: (r, v, m) => textMatch(String(r.page_usertitle), v, m) || textMatch(String(r.page_menuname), v, m) },
  { param: 'menutext', matches: (r, v, m) => textMatch(String(r.page_menuname), v, m) },
  { param: 'filename', matches: (r, v, m) => textMatch(String(r.page_alias), v, m) },
  { param: 'tags', matches: (r, v, m) => listMatch(String(r.page_keywords), v, m) },
];
const BLOG_FILTERS: readonly Filter[] = [
  { param: 'title', matches: (r, v, m) => textMatch(String(r.info_title), v, m) },
  { param: 'filename', matches: (r, v, m) => textMatch(String(r.info_filename), v, m) },
  { param: 'tags', matches: (r, v, m) => listMatch(String(r.info_tags), v, m) },
];

const TEXTS = [
  'Crème brûlée garden',
  'CREME BRULEE',
  "The Gärtner's GARDEN party",
  '50% off garden',
  '50x off',
  'snake_case_title',
  'snakeXcaseXtitle',
  'back\\slash',
  'C:\\temp\\',
  'naïve café',
  'Ünïcödé ünicode',
  'ab',
  'Garden "quoted" text',
  'αβγδ Ελληνικά',
  '日本語のテキスト',
];

const VALUES = [
  'garden',
  'GARDEN',
  'creme',
  'crème brû',
  'rden',
  'ar',
  'e',
  '50\\% off',
  '50% off',
  '50',
  'snake_case',
  'snake\\_case',
  'back\\slash',
  'back\\\\slash',
  'c:\\t%',
  '%den',
  'g%n',
  'gar_en',
  '"quoted"',
  'βγδ',
  'テキスト',
  'naive cafe',
  'unicode',
  'roses',
  'rose, garden',
  'tag two',
];

async function post(app: BlogTestApp, resource: 'page' | 'blog', body: Record<string, unknown>): Promise<number> {
  const response = await app.app.inject({ method: 'POST', url: `/api/${resource}`, headers: app.site.headers, payload: body });
  assert.equal(response.statusCode, 201, response.body);
  const record = json(response).data[0];
  return record.page ?? record.info_id;
}

async function seed(app: BlogTestApp): Promise<{ pages: number[]; blogs: number[] }> {
  const pages: number[] = [];
  const blogs: number[] = [];
  for (const [i, text] of TEXTS.entries()) {
    const other = TEXTS[(i + 3) % TEXTS.length] as string;
    pages.push(await post(app, 'page', { page_usertitle: text, page_menuname: other, page_keywords: `tag one, ${other} ,Roses,tag two` }));
    blogs.push(await post(app, 'blog', { page: app.pageId, info_title: text, info_tags: `${other}, rose, garden` }));
  }
  return { pages, blogs };
}

async function idsListed(app: BlogTestApp, resource: 'page' | 'blog', query: string): Promise<number[]> {
  const response = await app.app.inject({ url: `/api/${resource}?pageSize=100&${query}`, headers: app.site.headers });
  assert.equal(response.statusCode, 200, `${resource}?${query}: ${response.body}`);
  return json(response)
    .data.map((r: { page?: number; info_id?: number }) => r.info_id ?? r.page)
    .sort((a: number, b: number) => a - b);
}

/** Every filter, value and match type, listed against what the rows' columns say. */
async function assertSameAsScan(app: BlogTestApp, label: string): Promise<void> {
  const pages = await app.db.kysely
    .selectFrom('pages')
    .select(['page', 'page_usertitle', 'page_menuname', 'page_alias', 'page_keywords'])
    .where('site_id', '=', app.site.siteId)
    .execute();
  const blogs = await app.db.kysely
    .selectFrom('blogs')
    .select(['info_id', 'info_title', 'info_filename', 'info_tags'])
    .where('site_id', '=', app.site.siteId)
    .execute();
  const kinds = [
    { resource: 'page', rows: pages as Row[], id: 'page', filters: PAGE_FILTERS },
    { resource: 'blog', rows: blogs as Row[], id: 'info_id', filters: BLOG_FILTERS },
  ] as const;
  for (const { resource, rows, id, filters } of kinds) {
    for (const filter of filters) {
      for (const value of VALUES) {
        for (const matchType of MATCH_TYPES) {
          const query = `${filter.param}=${encodeURIComponent(value)}&matchType=${matchType}`;
          const expected = rows
            .filter((row) => filter.matches(row, value, matchType))
            .map((row) => Number(row[id]))
            .sort((a, b) => a - b);
          assert.deepEqual(await idsListed(app, resource, query), expected, `${label}: ${resource}?${query}`);
        }
      }
    }
  }
}

test('literalRuns gives the text between wildcards, escapes resolved', () => {
  assert.deepEqual(literalRuns('%50\\% of_f%'), ['50% of', 'f']);
  assert.deepEqual(literalRuns('back\\\\slash'), ['back\\slash']);
  assert.deepEqual(literalRuns('%%__'), []);
  assert.deepEqual(literalRuns('snake\\_case'), ['snake_case']);
});

test('text filters answer what a scan answers, for every match type, through creates, updates, deletes and restores', async (t) => {
  const app = await buildBlogApp(t, { rateLimits: { api: 0, token: 0 } });
  const { pages, blogs } = await seed(app);
  await assertSameAsScan(app, 'as created');

  const patch = async (resource: 'page' | 'blog', id: number, body: Record<string, unknown>) => {
    const response = await app.app.inject({ method: 'PATCH', url: `/api/${resource}/${id}`, headers: app.site.headers, payload: body });
    assert.equal(response.statusCode, 200, response.body);
  };
  const remove = async (resource: 'page' | 'blog', id: number) => {
    const response = await app.app.inject({ method: 'DELETE', url: `/api/${resource}/${id}`, headers: app.site.headers });
    assert.equal(response.statusCode, 204, response.body);
  };
  await patch('page', pages[0] as number, { page_usertitle: 'Rose garden', page_menuname: 'snake_case', page_keywords: 'crème brûlée' });
  await patch('blog', blogs[0] as number, { info_title: 'Rose garden', info_tags: 'snake_case, garden' });
  await remove('page', pages[3] as number);
  await remove('blog', blogs[3] as number);
  await assertSameAsScan(app, 'after updates and deletes');

  // A deleted page and blog come back, and an update is taken back, by restoring revisions: the
  // write path undo takes.
  for (const [resource, id] of [
    ['page', pages[3]],
    ['blog', blogs[3]],
    ['page', pages[0]],
    ['blog', blogs[0]],
  ] as const) {
    const response = await app.app.inject({ method: 'POST', url: `/api/${resource}/${id}/revisions/1/restore`, headers: app.site.headers });
    assert.ok([200, 201].includes(response.statusCode), response.body);
  }
  await assertSameAsScan(app, 'after restores');

  // A write outside the service (the CLI, a seeder, a hand-made fix) is indexed too.
  await sql`update pages set page_menuname = ${'Garden of snake_case'} where page = ${pages[5]}`.execute(app.db.kysely);
  await sql`update blogs set info_tags = ${'roses, tag two'} where info_id = ${blogs[5]}`.execute(app.db.kysely);
  await assertSameAsScan(app, 'after writes outside the service');
});

test('a contains filter of three characters or more reads the trigram index; a shorter one scans', async (t) => {
  const app = await buildBlogApp(t);
  const siteId = app.site.siteId;
  // Enough rows that the index is the planner's choice on PostgreSQL, whatever it knew before:
  // copies of one page and one blog, one in 200 holding the word.
  const pageId = await post(app, 'page', { page_usertitle: 'Model page' });
  const blogId = await post(app, 'blog', { page: app.pageId, info_title: 'Model blog' });
  await copies(app, 'pages', 'page', pageId, { page_usertitle: 'title', page_alias: 'name' });
  await copies(app, 'blogs', 'info_id', blogId, { info_title: 'title', info_filename: 'name' });
  // Vacuumed as autovacuum would: a GIN index costs its pending list until then.
  if (app.db.dialect === 'postgres') await sql`vacuum analyze pages, blogs`.execute(app.db.kysely);
  // planOf switches sorts off, which on PostgreSQL favours reading the list's order index and
  // filtering every row: here the question is whether the filter can be served from its index.
  const planWithSorts = async (query: CompiledQuery): Promise<string[]> => {
    if (app.db.dialect === 'sqlite') return planOf(app.db, query);
    return app.db.kysely.transaction().execute(async (tx) => {
      await sql`set local enable_seqscan = off`.execute(tx);
      const plan = await tx.executeQuery<{ 'QUERY PLAN': string }>({ ...query, sql: `explain ${query.sql}` });
      return plan.rows.map((r) => r['QUERY PLAN'].trim());
    });
  };

  for (const [resource, index] of [
    [PAGES, 'pages_trgm_page_usertitle'],
    [BLOGS, 'blogs_trgm_info_title'],
  ] as const) {
    const plan = async (title: string, matchType: MatchType = 'contains') => {
      const { handle, queries } = recording(app.db);
      const listed = await listRows(handle, resource as typeof PAGES, siteId, { title, matchType }, 0, 100);
      // The queries that read the records (not the website's change number, read to see whether a
      // kept list is current).
      const reads = queries.filter((q) => !q.sql.includes('change_counters'));
      const plans = await Promise.all(reads.map(async (q) => (await planWithSorts(q)).join('\n')));
      return { listed, plans, queries: reads };
    };
    const long = await plan('garden');
    assert.ok(long.listed.total > 0);
    if (app.db.dialect === 'sqlite') {
      // On SQLite a contains of 3+ characters is the phrase query itself: no row's columns are
      // folded and compared, so the total counts matches in the index. Other patterns keep the
      // exact check after the index.
      for (const q of long.queries) assert.doesNotMatch(q.sql, /cms_fold\(/, q.sql);
      const starts = await plan('garden', 'startsWith');
      for (const q of starts.queries) assert.match(q.sql, /cms_fold\(/, q.sql);
    }
    // The queries that filter (not the read of the window's records by key).
    const filtering = long.plans.filter((_, i) => / match |like|ilike|%/.test(long.queries[i]!.sql));
    assert.ok(filtering.length >= 1);
    for (const p of filtering) {
      if (app.db.dialect === 'sqlite') assert.match(p, new RegExp(`${resource.table}_trgm VIRTUAL TABLE INDEX`), p);
      else assert.match(p, new RegExp(`Bitmap Index Scan on ${index}`), p);
    }
    const short = await plan('ga');
    for (const p of short.plans) {
      if (app.db.dialect === 'sqlite') assert.doesNotMatch(p, /_trgm/, p);
    }
  }
});

test("SQLite: a filter's first window sorts few matches or walks the order's index; its matches, read once, give the next", async (t) => {
  const app = await buildBlogApp(t);
  if (app.db.dialect !== 'sqlite') return t.skip('PostgreSQL plans the window itself from pg_trgm statistics');
  const siteId = app.site.siteId;
  const pageId = await post(app, 'page', { page_usertitle: 'Model page' });
  await copies(app, 'pages', 'page', pageId, { page_usertitle: 'title', page_alias: 'name' });
  // Orders that differ from the ids, so a window in the wrong order cannot pass.
  await sql`update pages set page_order = (page * 7919) % 1000 where site_id = ${siteId}`.execute(app.db.kysely);
  const expected = async (word: string) =>
    (
      await sql<{ page: number }>`select page from pages where site_id = ${siteId}
        and (page_usertitle like ${`%${word}%`} or page_menuname like ${`%${word}%`}) order by page_order, page`.execute(app.db.kysely)
    ).rows.map((row) => row.page);
  // A window of `title` through a recording handle, and the plans of its queries in list order
  // (those that `planned` picks).
  const lister = (kept: KeptLists, planned: (sql: string) => boolean) => {
    const { handle, queries } = recording(app.db);
    keptListsOf(handle, kept);
    return async (title: string, offset: number, limit: number) => {
      queries.length = 0;
      const listed = await listRows(handle, PAGES, siteId, { title, matchType: 'contains' }, offset, limit);
      const plans = await Promise.all(queries.filter((q) => q.sql.includes('order by') && planned(q.sql)).map((q) => planOf(app.db, q)));
      return { ids: listed.rows.map((row) => row.id), total: listed.total, plans: plans.map((p) => p.join('\n')) };
    };
  };
  const window = lister(new KeptLists(), () => true);
  type Window = Awaited<ReturnType<typeof window>>;
  // A window read by its own query: few matches sorted (the order's index is not walked), or many
  // found by walking the order's index until the window is full, with no sort.
  const sortsFew = (read: Window, ids: number[], total: number) => {
    assert.deepEqual(read.ids, ids);
    assert.equal(read.total, total);
    assert.equal(read.plans.length, 1);
    assert.match(read.plans[0]!, /USE TEMP B-TREE FOR ORDER BY/);
    assert.doesNotMatch(read.plans[0]!, /pages_site_order/);
  };
  const walksMany = (read: Window, ids: number[], total: number) => {
    assert.deepEqual(read.ids, ids);
    assert.equal(read.total, total);
    assert.match(read.plans[0]!, /pages_site_order/);
    assert.doesNotMatch(read.plans[0]!, /TEMP B-TREE/);
  };

  // 10 of 2,001 rows hold "garden". The first window: the total, then the window, which sorts
  // the few matches (the order's index is not walked).
  const garden = await expected('garden');
  assert.equal(garden.length, 10);
  sortsFew(await window('garden', 0, 100), garden, 10);
  // The next window of the filter, its total kept: its matches are read from the index by key and
  // sorted, once; each window after is a slice of them, with no query that filters.
  const second = await window('garden', 3, 4);
  assert.deepEqual(second.ids, garden.slice(3, 7));
  assert.equal(second.total, 10);
  assert.equal(second.plans.length, 1);
  assert.match(second.plans[0]!, /USING INTEGER PRIMARY KEY \(rowid=\?\)/);
  assert.match(second.plans[0]!, /pages_trgm VIRTUAL TABLE INDEX/);
  assert.doesNotMatch(second.plans[0]!, /pages_site_order/);
  assert.deepEqual(await window('garden', 5, 2), { ids: garden.slice(5, 7), total: 10, plans: [] });
  assert.deepEqual(await window('garden', 10, 100), { ids: [], total: 10, plans: [] });
  // Every copy holds "copy". The first window walks the order's index until it is full, with no
  // sort; the matches, read for the next, by the same walk to the end (reading no row).
  const copy = await expected('copy');
  assert.equal(copy.length, 2000);
  walksMany(await window('copy', 150, 100), copy.slice(150, 250), 2000);
  const all = await window('copy', 0, 10);
  assert.deepEqual(all.ids, copy.slice(0, 10));
  assert.match(all.plans[0]!, /COVERING INDEX pages_site_order/);
  assert.doesNotMatch(all.plans[0]!, /TEMP B-TREE/);
  assert.deepEqual(await window('copy', 1990, 100), { ids: copy.slice(1990), total: 2000, plans: [] });

  // More matches than are kept: every window is read by a query, as the first one is.
  // The window's query: the list's columns (not the query of the matches' ids).
  const over = lister(new KeptLists(500, 1_000_000, 5), (sql) => sql.includes('octet_length'));
  for (const [offset, limit] of [
    [0, 100],
    [3, 4],
  ] as const) {
    sortsFew(await over('garden', offset, limit), garden.slice(offset, offset + limit), 10);
  }
  walksMany(await over('copy', 150, 100), copy.slice(150, 250), 2000);
  // A window past the total is empty, and no window query is made.
  assert.deepEqual(await over('garden', 10, 100), { ids: [], total: 10, plans: [] });
});

/** 2,000 copies of one row, with the columns given a title (every 200th with "garden") or a unique name. */
async function copies(app: BlogTestApp, table: string, key: string, id: number, made: Record<string, 'title' | 'name'>): Promise<void> {
  const columns =
    app.db.dialect === 'sqlite'
      ? (await sql<{ name: string }>`select name from pragma_table_info(${table})`.execute(app.db.kysely)).rows.map((r) => r.name)
      : (
          await sql<{ name: string }>`select column_name as name from information_schema.columns
            where table_schema = current_schema() and table_name = ${table} and is_generated = 'NEVER'`.execute(app.db.kysely)
        ).rows.map((r) => r.name);
  const copied = columns.filter((c) => c !== key);
  const value = (c: string) =>
    made[c] === 'title'
      ? sql`'Copy ' || n || case when n % 200 = 0 then ' garden' else ' lawn' end`
      : made[c] === 'name'
        ? sql`'copy-' || n`
        : sql.ref(c);
  await sql`insert into ${sql.table(table)} (${sql.join(copied.map((c) => sql.ref(c)))})
    with recursive g(n) as (select 1 union all select n + 1 from g where n < 2000)
    select ${sql.join(copied.map(value))} from ${sql.table(table)}, g where ${sql.ref(key)} = ${id}`.execute(app.db.kysely);
}
