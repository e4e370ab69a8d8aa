import {
  type ExpressionBuilder,
  expressionBuilder,
  type Insertable,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
  type Updateable,
} from 'kysely';
import { type DialectName, dialectOf } from '../../db/database.js';
import { refusedAs } from '../../db/errors.js';
import { preparedLookup } from '../../db/prepared-lookup.js';
import type { Database, DbHandle } from '../../db/schema.js';
import type { MaybePromise } from '../../maybe-async.js';
import { hiddenPages, listTotal } from '../shared/content.queries.js';
import { anyListItemMatches, fullTextMatches, textMatches } from '../shared/filters.js';
import type { MatchType } from '../shared/schemas.js';
import type { StoredItem, StoredRecord } from '../shared/stored.js';
import { PAGE_FIELDS, type PageField } from './page.fields.js';
import type { PageRow, PagesTable } from './page.table.js';

export type NewPageRow = Insertable<PagesTable>;
export type PageChanges = Updateable<PagesTable>;

export const PAGE_COLUMNS = Object.keys(PAGE_FIELDS) as PageField[];

export interface PageFilter {
  id?: number;
  /** The same as id; both may be sent, and then both must hold. */
  page?: number;
  parent?: number;
  title?: string;
  filename?: string;
  tags?: string;
  keywords?: string;
  matchType?: MatchType;
  publicContentOnly?: boolean;
}

/** The conditions of a filter, beside the website's: none when the list is every page of the website. */
function conditionsOf(eb: ExpressionBuilder<Database, 'pages'>, dialect: DialectName, siteId: number, f: PageFilter) {
  const conditions = [];
  if (f.id !== undefined) conditions.push(eb('pages.page', '=', f.id));
  if (f.page !== undefined) conditions.push(eb('pages.page', '=', f.page));
  if (f.parent !== undefined) conditions.push(eb('pages.page_parent', '=', f.parent));
  if (f.title !== undefined) {
    conditions.push(
      eb.or([
        textMatches(dialect, eb.ref('pages.page_usertitle'), f.title, f.matchType) as never,
        textMatches(dialect, eb.ref('pages.page_menuname'), f.title, f.matchType) as never,
      ]),
    );
  }
  if (f.filename !== undefined) conditions.push(textMatches(dialect, eb.ref('pages.page_alias'), f.filename, f.matchType) as never);
  if (f.tags !== undefined) conditions.push(anyListItemMatches(dialect, eb.ref('pages.page_keywords'), f.tags, f.matchType) as never);
  if (f.keywords !== undefined) conditions.push(fullTextMatches(dialect, 'pages', 'page', f.keywords) as never);
  if (f.publicContentOnly) conditions.push(sql<SqlBool>`pages.page not in ${hiddenPages(siteId)}` as never);
  return conditions;
}

function filtered(db: DbHandle, siteId: number, f: PageFilter) {
  const dialect = dialectOf(db);
  return db
    .selectFrom('pages')
    .where('pages.site_id', '=', siteId)
    .where((eb) => eb.and(conditionsOf(eb, dialect, siteId, f)));
}

export async function listPages(
  db: DbHandle,
  siteId: number,
  filter: PageFilter,
  offset: number,
  limit: number,
): Promise<{ rows: StoredItem[]; total: number }> {
  const everyPage = conditionsOf(expressionBuilder<Database, 'pages'>(), dialectOf(db), siteId, filter).length === 0;
  const [rows, total] = await Promise.all([
    listWindow(db, siteId, filter, offset, limit).execute(),
    listTotal(db, siteId, 'pages', everyPage ? undefined : filtered(db, siteId, filter)),
  ]);
  return { rows, total };
}

function inListOrder(db: DbHandle, siteId: number, filter: PageFilter) {
  return inOrder(filtered(db, siteId, filter).select(['pages.page as id', 'pages.record_json', 'pages.etag']));
}

function inOrder<Q extends SelectQueryBuilder<Database, 'pages', object>>(query: Q): Q {
  return query.orderBy('pages.page_order').orderBy('pages.page') as Q;
}

/**
 * The rows of an offset window. SQLite walks the index pages_site_order past the skipped rows.
 * PostgreSQL reads the window's keys first, by an index-only scan of that index, and then only
 * those rows by primary key: the plain form sorted or read the heap row of every skipped row
 * (45 ms at offset 15,000 of 20,000 against 4 ms; docs/architecture.md). On SQLite the same
 * shape is slower (1.5 against 0.8 ms), so each database runs its own.
 */
function listWindow(db: DbHandle, siteId: number, filter: PageFilter, offset: number, limit: number) {
  if (dialectOf(db) === 'sqlite') return inListOrder(db, siteId, filter).offset(offset).limit(limit);
  const keys = inOrder(filtered(db, siteId, filter).select('pages.page'))
    .offset(offset)
    .limit(limit);
  return inListOrder(db, siteId, {}).where('pages.page', '=', sql<number>`any(array(${keys}))`);
}

/** A page's place in list order: (page_order, page). */
export type PageKey = [order: number, page: number];

/**
 * Keyset paging: up to `limit` pages after `after` (from the start when null), and the key of the
 * last one when more follow (null on the last page). The row-value condition is a range of the
 * index pages_site_order (site_id, page_order, page): no count, no sort, no earlier row read.
 */
export async function listPagesAfter(
  db: DbHandle,
  siteId: number,
  filter: PageFilter,
  after: PageKey | null,
  limit: number,
): Promise<{ rows: StoredItem[]; next: PageKey | null }> {
  // The key is selected by name, whatever else the list selects: the next cursor is made of it.
  let query = inListOrder(db, siteId, filter).select(['pages.page_order', 'pages.page']);
  if (after) query = query.where((eb) => eb(eb.refTuple('pages.page_order', 'pages.page'), '>', eb.tuple(after[0], after[1])));
  // One more than asked says whether a next page exists.
  const rows = await query.limit(limit + 1).execute();
  if (rows.length <= limit) return { rows, next: null };
  rows.length = limit;
  const last = rows[limit - 1]!;
  return { rows, next: [last.page_order, last.page] };
}

function storedByIdQuery(db: DbHandle, { siteId, id }: { siteId: number; id: number }) {
  return db.selectFrom('pages').select(['record_json', 'etag']).where('site_id', '=', siteId).where('page', '=', id);
}

/** One page's stored record, outside a transaction: the hottest read, a prepared statement on SQLite. */
export function readStoredPage(db: DbHandle, siteId: number, id: number): MaybePromise<StoredRecord | undefined> {
  return preparedLookup(db, storedByIdQuery, { siteId, id });
}

/**
 * A page's columns and its stored ETag (for If-Match). `lock` takes a row lock so a check and the
 * write after it see the same row (PostgreSQL; SQLite writes are serial already).
 */
export async function findPage(db: DbHandle, siteId: number, id: number, lock = false): Promise<(PageRow & { etag: string }) | undefined> {
  const query = db
    .selectFrom('pages')
    .select([...PAGE_COLUMNS, 'etag'])
    .where('site_id', '=', siteId)
    .where('page', '=', id);
  return (lock && dialectOf(db) === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
}

const aliasTaken = (alias: unknown) => ({ unique: `Another page of this website already has the alias "${alias}".` });

export async function insertPage(db: DbHandle, row: NewPageRow): Promise<number> {
  const inserted = await refusedAs(
    db.insertInto('pages').values(row).returning('page').executeTakeFirstOrThrow(),
    aliasTaken(row.page_alias),
  );
  return inserted.page;
}

export async function updatePage(db: DbHandle, siteId: number, id: number, changes: PageChanges): Promise<void> {
  await refusedAs(
    db.updateTable('pages').set(changes).where('site_id', '=', siteId).where('page', '=', id).execute(),
    aliasTaken(changes.page_alias),
  );
}

/** Writes the stored record that the row's columns give (after every write, in its transaction). */
export async function storePage(db: DbHandle, siteId: number, id: number, stored: StoredRecord): Promise<void> {
  await db.updateTable('pages').set(stored).where('site_id', '=', siteId).where('page', '=', id).execute();
}

export async function deletePage(db: DbHandle, siteId: number, id: number): Promise<boolean> {
  const result = await db.deleteFrom('pages').where('site_id', '=', siteId).where('page', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The page itself and its ancestors, nearest first (bounded, in case stored data already loops). */
export async function ancestryOf(db: DbHandle, siteId: number, id: number): Promise<number[]> {
  const result = await sql<{ page: number }>`with recursive chain(page, parent, depth) as (
      select page, page_parent, 0 from pages where site_id = ${siteId} and page = ${id}
      union all
      select p.page, p.page_parent, c.depth + 1 from pages p join chain c on p.page = c.parent
      where p.site_id = ${siteId} and c.depth < 10000
    ) select page from chain order by depth`.execute(db);
  return result.rows.map((r) => r.page);
}

export async function countChildren(db: DbHandle, siteId: number, id: number): Promise<number> {
  const row = await db
    .selectFrom('pages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('site_id', '=', siteId)
    .where('page_parent', '=', id)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Every page of a website, only what an outline needs, in menu order. */
export async function pageOutline(db: DbHandle, siteId: number) {
  return db
    .selectFrom('pages')
    .select(['page', 'page_usertitle', 'page_menuname', 'page_alias', 'page_parent', 'page_order', 'page_privacy'])
    .where('site_id', '=', siteId)
    .orderBy('page_order')
    .orderBy('page')
    .execute();
}
