import { type Expression, type ExpressionBuilder, type Insertable, type SqlBool, sql, type Updateable } from 'kysely';
import type { DialectName } from '../../db/database.js';
import { refusedAs } from '../../db/errors.js';
import type { Database, DbHandle } from '../../db/schema.js';
import { lockInTransaction } from '../../db/transaction.js';
import { hiddenPages } from '../shared/content.queries.js';
import { anyListItemMatches, fullTextMatches, textMatches } from '../shared/filters.js';
import type { MatchType } from '../shared/schemas.js';
import { storedResource, storedText } from '../shared/stored-resource.js';
import { PAGE_BODY_FIELDS, PAGE_FIELDS, type PageField } from './page.fields.js';
import { pageSortKeys, toPageRecord } from './page.record.js';
import type { PagesTable } from './page.table.js';

type NewPageRow = Insertable<PagesTable>;
export type PageChanges = Updateable<PagesTable>;

interface PageFilter {
  id?: number;
  /** The same as id; both may be sent, and then both must hold. */
  page?: number;
  parent?: number;
  title?: string;
  filename?: string;
  tags?: string;
  /** The same as tags; both may be sent, and then both must hold. */
  tag?: string;
  menutext?: string;
  keywords?: string;
  matchType?: MatchType;
  publicContentOnly?: boolean;
}

/** The conditions of a filter, beside the website's: none when the list is every page of the website. */
function conditionsOf(eb: ExpressionBuilder<Database, 'pages'>, dialect: DialectName, siteId: number, f: PageFilter) {
  const conditions: Expression<SqlBool>[] = [];
  if (f.id !== undefined) conditions.push(eb('pages.page', '=', f.id));
  if (f.page !== undefined) conditions.push(eb('pages.page', '=', f.page));
  if (f.parent !== undefined) conditions.push(eb('pages.page_parent', '=', f.parent));
  if (f.title !== undefined) {
    conditions.push(textMatches(dialect, ['pages.page_usertitle', 'pages.page_menuname'], f.title, f.matchType));
  }
  if (f.menutext !== undefined) conditions.push(textMatches(dialect, 'pages.page_menuname', f.menutext, f.matchType));
  if (f.filename !== undefined) conditions.push(textMatches(dialect, 'pages.page_alias', f.filename, f.matchType));
  for (const tags of [f.tags, f.tag]) {
    if (tags !== undefined) conditions.push(anyListItemMatches(dialect, 'pages.page_keywords', tags, f.matchType));
  }
  if (f.keywords !== undefined) conditions.push(fullTextMatches(dialect, 'pages', 'page', f.keywords));
  if (f.publicContentOnly) conditions.push(sql<SqlBool>`pages.page not in ${hiddenPages(siteId)}`);
  return conditions;
}

/** The by-id read of a page's stored record: preparedLookup prepares it once (see `storedById`). */
function storedByIdQuery(db: DbHandle, { siteId, id }: { siteId: number; id: number }) {
  return db
    .selectFrom('pages')
    .select([storedText(db, 'pages'), 'etag'])
    .where('site_id', '=', siteId)
    .where('page', '=', id);
}

const PAGE_ID = { column: 'page', type: 'int' } as const;
const NEWEST_PAGE_FIRST = { ...PAGE_ID, desc: true } as const;

/**
 * Pages to the shared stored-record queries. Listed in menu order by default; each order a client
 * can choose is read from its own index (migration 0014), the id breaking ties.
 */
export const PAGES = storedResource({
  noun: 'page',
  table: 'pages',
  id: 'page',
  columns: Object.keys(PAGE_FIELDS) as PageField[],
  fields: { names: [...Object.keys(PAGE_FIELDS), 'id'], ids: ['page', 'id'], bodies: PAGE_BODY_FIELDS },
  toRecord: toPageRecord,
  sortKeys: pageSortKeys,
  storedById: storedByIdQuery,
  orders: {
    order: { index: 'pages_site_order', columns: [{ column: 'page_order', type: 'int' }, PAGE_ID] },
    title: { index: 'pages_site_title', columns: [{ column: 'title_sort_key', type: 'text' }, PAGE_ID] },
    menutext: { index: 'pages_site_menutext', columns: [{ column: 'menutext_sort_key', type: 'text' }, PAGE_ID] },
    // Newest first unless asked otherwise.
    created: { index: 'pages_site_created', columns: [{ column: 'page_dt_begin', type: 'text', desc: true }, NEWEST_PAGE_FIRST] },
    updated: { index: 'pages_site_updated', columns: [{ column: 'page_lastmodified', type: 'text', desc: true }, NEWEST_PAGE_FIRST] },
    id: { index: 'pages_site_id', columns: [PAGE_ID] },
  },
  conditions: conditionsOf,
  /** Cursors of the page list: `["p", page_order, page]` of the last page shown, in the default order. */
  cursorTag: 'p',
});

const aliasTaken = (alias: unknown) => ({
  unique: `Another page of this website already has the alias "${alias}": choose another page_alias, or send it empty to have one made from the title.`,
});

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

/** The page itself and its ancestors, nearest first (bounded, in case stored data already loops). */
/** Class of the pg_advisory_xact_lock(class, site) that serialises changes of a website's page tree. */
const PAGE_TREE_LOCK = 7305;

/**
 * Holds the website's page tree until the transaction ends: every write that checks the tree
 * before changing it (a move's cycle check, a new page's parent, a delete's sub pages, a restore's
 * parent) takes it first, so the check sees every move committed before it and none can commit
 * beside it. Row locks alone do not do this: moving A under B and B under A lock different rows,
 * and each check reads the other's parent as it was. Take it before the row's lock (findForWrite),
 * in every path, so that two writers never wait for each other in opposite orders.
 */
export function lockPageTree(db: DbHandle, siteId: number): Promise<void> {
  return lockInTransaction(db, PAGE_TREE_LOCK, siteId);
}

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
