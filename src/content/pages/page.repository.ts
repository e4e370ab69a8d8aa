import { type Insertable, type Kysely, type Selectable, type SqlBool, sql, type Updateable } from 'kysely';
import type { Db, DialectName } from '../../db/database.js';
import type { Database, PagesTable } from '../../db/schema.js';
import { anyListItemMatches, fullTextMatches, textMatches } from '../shared/filters.js';
import type { MatchType } from '../shared/schemas.js';
import { PAGE_FIELDS, type PageField } from './page.fields.js';

type Handle = Kysely<Database>;
export type PageRow = Pick<Selectable<PagesTable>, PageField>;
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

/**
 * Pages a visitor may not see: member-only pages and everything below them, whatever its own
 * setting. Shared with blogs, whose public list needs a public page.
 */
export function hiddenPages(siteId: number) {
  return sql<{ page: number }>`(with recursive hidden(page) as (
      select page from pages where site_id = ${siteId} and (page_privacy <> 0 or page_privacy_groupid <> 0)
      union
      select p.page from pages p join hidden h on p.page_parent = h.page where p.site_id = ${siteId}
    ) select page from hidden)`;
}

function filtered(db: Handle, dialect: DialectName, siteId: number, f: PageFilter) {
  return db
    .selectFrom('pages')
    .where('pages.site_id', '=', siteId)
    .where((eb) => {
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
      return eb.and(conditions);
    });
}

export async function listPages(
  db: Handle,
  dialect: DialectName,
  siteId: number,
  filter: PageFilter,
  offset: number,
  limit: number,
): Promise<{ rows: PageRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    filtered(db, dialect, siteId, filter)
      .select(PAGE_COLUMNS.map((c) => `pages.${c}` as const))
      .orderBy('pages.page_order')
      .orderBy('pages.page')
      .offset(offset)
      .limit(limit)
      .execute(),
    filtered(db, dialect, siteId, filter)
      .select((eb) => eb.fn.countAll<number>().as('total'))
      .executeTakeFirstOrThrow(),
  ]);
  return { rows: rows as PageRow[], total: Number(count.total) };
}

function byIdQuery(db: Handle, siteId: number, id: number) {
  return db.selectFrom('pages').select(PAGE_COLUMNS).where('site_id', '=', siteId).where('page', '=', id);
}

/** One page by id, outside a transaction: the hottest read, a prepared statement on SQLite. */
export async function readPage(db: Db, siteId: number, id: number): Promise<PageRow | undefined> {
  const statement = db.hotStatement('pages.byId', () => byIdQuery(db.kysely, 0, 0));
  return statement ? (statement.get(siteId, id) as PageRow | undefined) : byIdQuery(db.kysely, siteId, id).executeTakeFirst();
}

/** `lock` takes a row lock (PostgreSQL) so a check and the write after it see the same row. */
export async function findPage(db: Handle, siteId: number, id: number, lock = false): Promise<PageRow | undefined> {
  const query = byIdQuery(db, siteId, id);
  return (lock ? query.forUpdate() : query).executeTakeFirst();
}

export async function pageExists(db: Handle, siteId: number, id: number): Promise<boolean> {
  const row = await db.selectFrom('pages').select('page').where('site_id', '=', siteId).where('page', '=', id).executeTakeFirst();
  return row !== undefined;
}

export async function insertPage(db: Handle, row: NewPageRow): Promise<number> {
  const inserted = await db.insertInto('pages').values(row).returning('page').executeTakeFirstOrThrow();
  return inserted.page;
}

export async function updatePage(db: Handle, siteId: number, id: number, changes: PageChanges): Promise<void> {
  await db.updateTable('pages').set(changes).where('site_id', '=', siteId).where('page', '=', id).execute();
}

export async function deletePage(db: Handle, siteId: number, id: number): Promise<boolean> {
  const result = await db.deleteFrom('pages').where('site_id', '=', siteId).where('page', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The page itself and its ancestors, nearest first (bounded, in case stored data already loops). */
export async function ancestryOf(db: Handle, siteId: number, id: number): Promise<number[]> {
  const result = await sql<{ page: number }>`with recursive chain(page, parent, depth) as (
      select page, page_parent, 0 from pages where site_id = ${siteId} and page = ${id}
      union all
      select p.page, p.page_parent, c.depth + 1 from pages p join chain c on p.page = c.parent
      where p.site_id = ${siteId} and c.depth < 10000
    ) select page from chain order by depth`.execute(db);
  return result.rows.map((r) => r.page);
}

export async function countChildren(db: Handle, siteId: number, id: number): Promise<number> {
  const row = await db
    .selectFrom('pages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('site_id', '=', siteId)
    .where('page_parent', '=', id)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Arbitrary class id for the pg_advisory_xact_lock(class, site) of page aliases. */
const ALIAS_LOCK_CLASS = 7301;

export async function lockAliases(db: Handle, dialect: DialectName, siteId: number): Promise<void> {
  if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(${ALIAS_LOCK_CLASS}, ${siteId})`.execute(db);
}

/** Aliases in use that equal `base` or extend it with a -N suffix. */
export async function aliasesLike(db: Handle, siteId: number, base: string): Promise<string[]> {
  const pattern = `${base.replace(/[\\%_]/g, (c) => `\\${c}`)}-%`;
  const rows = await db
    .selectFrom('pages')
    .select('page_alias')
    .where('site_id', '=', siteId)
    .where((eb) => eb.or([eb('page_alias', '=', base), sql<SqlBool>`page_alias like ${pattern} escape '\\'`]))
    .execute();
  return rows.map((r) => r.page_alias);
}
