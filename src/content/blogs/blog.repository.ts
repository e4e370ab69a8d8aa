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
import { BLOG_FIELDS, type BlogField } from './blog.fields.js';
import type { BlogImageRow, BlogRow, BlogsTable } from './blog.table.js';

export type NewBlogRow = Insertable<BlogsTable>;
export type BlogChanges = Updateable<BlogsTable>;

export const BLOG_COLUMNS = Object.keys(BLOG_FIELDS) as BlogField[];

export interface BlogFilter {
  id?: number;
  page?: number;
  title?: string;
  filename?: string;
  tags?: string;
  keywords?: string;
  matchType?: MatchType;
  /** Today's date (YYYY-MM-DD, UTC) when only public blogs are wanted. */
  publicOn?: string;
}

/** The conditions of a filter, beside the website's: none when the list is every blog of the website. */
function conditionsOf(eb: ExpressionBuilder<Database, 'blogs'>, dialect: DialectName, siteId: number, f: BlogFilter) {
  const conditions = [];
  if (f.id !== undefined) conditions.push(eb('blogs.info_id', '=', f.id));
  if (f.page !== undefined) conditions.push(eb('blogs.page', '=', f.page));
  if (f.title !== undefined) conditions.push(textMatches(dialect, eb.ref('blogs.info_title'), f.title, f.matchType) as never);
  if (f.filename !== undefined) conditions.push(textMatches(dialect, eb.ref('blogs.info_filename'), f.filename, f.matchType) as never);
  if (f.tags !== undefined) conditions.push(anyListItemMatches(dialect, eb.ref('blogs.info_tags'), f.tags, f.matchType) as never);
  if (f.keywords !== undefined) conditions.push(fullTextMatches(dialect, 'blogs', 'info_id', f.keywords) as never);
  if (f.publicOn !== undefined) {
    // Dates are YYYY-MM-DD text, so comparing the strings compares the days.
    conditions.push(eb('blogs.info_show', '=', 'Y'));
    conditions.push(eb.or([eb('blogs.info_hideuntil', '=', ''), eb('blogs.info_hideuntil', '<=', f.publicOn)]));
    conditions.push(eb.or([eb('blogs.info_date', '=', ''), eb('blogs.info_date', '<=', f.publicOn)]));
    conditions.push(sql<SqlBool>`blogs.page not in ${hiddenPages(siteId)}` as never);
  }
  return conditions;
}

function filtered(db: DbHandle, siteId: number, f: BlogFilter) {
  const dialect = dialectOf(db);
  return db
    .selectFrom('blogs')
    .where('blogs.site_id', '=', siteId)
    .where((eb) => eb.and(conditionsOf(eb, dialect, siteId, f)));
}

export async function listBlogs(
  db: DbHandle,
  siteId: number,
  filter: BlogFilter,
  offset: number,
  limit: number,
): Promise<{ rows: StoredItem[]; total: number }> {
  const everyBlog = conditionsOf(expressionBuilder<Database, 'blogs'>(), dialectOf(db), siteId, filter).length === 0;
  const [rows, total] = await Promise.all([
    listWindow(db, siteId, filter, offset, limit).execute(),
    listTotal(db, siteId, 'blogs', everyBlog ? undefined : filtered(db, siteId, filter)),
  ]);
  return { rows, total };
}

function storedByIdQuery(db: DbHandle, { siteId, id }: { siteId: number; id: number }) {
  return db.selectFrom('blogs').select(['record_json', 'etag']).where('site_id', '=', siteId).where('info_id', '=', id);
}

/** One blog's stored record, outside a transaction: a prepared statement on SQLite. */
export function readStoredBlog(db: DbHandle, siteId: number, id: number): MaybePromise<StoredRecord | undefined> {
  return preparedLookup(db, storedByIdQuery, { siteId, id });
}

function inListOrder(db: DbHandle, siteId: number, filter: BlogFilter) {
  return inOrder(filtered(db, siteId, filter).select(['blogs.info_id as id', 'blogs.record_json', 'blogs.etag']));
}

function inOrder<Q extends SelectQueryBuilder<Database, 'blogs', object>>(query: Q): Q {
  return query.orderBy('blogs.info_order').orderBy('blogs.info_date', 'desc').orderBy('blogs.info_id') as Q;
}

/** The rows of an offset window: on PostgreSQL the window's keys first, as pages do (listWindow in page.repository.ts). */
function listWindow(db: DbHandle, siteId: number, filter: BlogFilter, offset: number, limit: number) {
  if (dialectOf(db) === 'sqlite') return inListOrder(db, siteId, filter).offset(offset).limit(limit);
  const keys = inOrder(filtered(db, siteId, filter).select('blogs.info_id'))
    .offset(offset)
    .limit(limit);
  return inListOrder(db, siteId, {}).where('blogs.info_id', '=', sql<number>`any(array(${keys}))`);
}

/** A blog's place in list order: (info_order, info_date newest first, info_id). */
export type BlogKey = [order: number, date: string, id: number];

type Ordered = ReturnType<typeof inListOrder>;

/**
 * Keyset paging: up to `limit` blogs after `after` (from the start when null), and the key of the
 * last one when more follow (null on the last page).
 *
 * The directions are mixed (info_date newest first), so no row value says "after". What follows a
 * key is three consecutive ranges of the index blogs_site_order (site_id, info_order, info_date
 * desc, info_id), each read in list order: the rest of its date, the older dates of its order,
 * the later orders. They are read one after another until the page is full, so no query skips
 * rows before the key or sorts. (One OR condition would scan every earlier blog of the same order.)
 */
export async function listBlogsAfter(
  db: DbHandle,
  siteId: number,
  filter: BlogFilter,
  after: BlogKey | null,
  limit: number,
): Promise<{ rows: StoredItem[]; next: BlogKey | null }> {
  const ranges: Array<(query: Ordered) => Ordered> = after
    ? [
        (q) => q.where('blogs.info_order', '=', after[0]).where('blogs.info_date', '=', after[1]).where('blogs.info_id', '>', after[2]),
        (q) => q.where('blogs.info_order', '=', after[0]).where('blogs.info_date', '<', after[1]),
        (q) => q.where('blogs.info_order', '>', after[0]),
      ]
    : [(q) => q];
  const rows: Array<StoredItem & { info_order: number; info_date: string; info_id: number }> = [];
  // One more than asked says whether a next page exists.
  for (const range of ranges) {
    if (rows.length > limit) break;
    rows.push(
      ...(await range(inListOrder(db, siteId, filter))
        // The key is selected by name, whatever else the list selects: the next cursor is made of it.
        .select(['blogs.info_order', 'blogs.info_date', 'blogs.info_id'])
        .limit(limit + 1 - rows.length)
        .execute()),
    );
  }
  if (rows.length <= limit) return { rows, next: null };
  rows.length = limit;
  const last = rows[limit - 1]!;
  return { rows, next: [last.info_order, last.info_date, last.info_id] };
}

/**
 * A blog's columns and its stored ETag (for If-Match). `lock` takes a row lock so a check and the
 * write after it see the same row (PostgreSQL; SQLite writes are serial already).
 */
export async function findBlog(db: DbHandle, siteId: number, id: number, lock = false): Promise<(BlogRow & { etag: string }) | undefined> {
  const query = db
    .selectFrom('blogs')
    .select([...BLOG_COLUMNS, 'etag'])
    .where('site_id', '=', siteId)
    .where('info_id', '=', id);
  return (lock && dialectOf(db) === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
}

/** A write refused by the filename index, or by the page's foreign key (deleted after it was checked). */
const refusals = (row: { info_filename?: unknown; page?: unknown }) => ({
  unique: `Another blog of this website already has the filename "${row.info_filename}".`,
  foreignKey: { field: 'page', message: `there is no page ${row.page} on this website` },
});

export async function insertBlog(db: DbHandle, row: NewBlogRow): Promise<number> {
  const inserted = await refusedAs(db.insertInto('blogs').values(row).returning('info_id').executeTakeFirstOrThrow(), refusals(row));
  return inserted.info_id;
}

export async function updateBlog(db: DbHandle, siteId: number, id: number, changes: BlogChanges): Promise<void> {
  await refusedAs(
    db.updateTable('blogs').set(changes).where('site_id', '=', siteId).where('info_id', '=', id).execute(),
    refusals(changes),
  );
}

/** Writes the stored record that the row's columns give (after every write, in its transaction). */
export async function storeBlog(db: DbHandle, siteId: number, id: number, stored: StoredRecord): Promise<void> {
  await db.updateTable('blogs').set(stored).where('site_id', '=', siteId).where('info_id', '=', id).execute();
}

export async function deleteBlog(db: DbHandle, siteId: number, id: number): Promise<void> {
  await db.deleteFrom('blogs').where('site_id', '=', siteId).where('info_id', '=', id).execute();
}

export async function listBlogImages(db: DbHandle, siteId: number, id: number): Promise<BlogImageRow[]> {
  return db.selectFrom('blog_images').selectAll().where('site_id', '=', siteId).where('info_id', '=', id).execute();
}

/** Metadata of an image this website uploaded, by its public path (for info_img set by path). */
export async function findImageByPath(db: DbHandle, siteId: number, path: string): Promise<BlogImageRow | undefined> {
  return db.selectFrom('blog_images').selectAll().where('site_id', '=', siteId).where('path', '=', path).limit(1).executeTakeFirst();
}

/** Makes the blog's image rows exactly `rows` (the images it shows now). */
export async function replaceBlogImages(db: DbHandle, siteId: number, id: number, rows: readonly BlogImageRow[]): Promise<void> {
  await db.deleteFrom('blog_images').where('site_id', '=', siteId).where('info_id', '=', id).execute();
  if (rows.length > 0) await db.insertInto('blog_images').values(rows).execute();
}

/**
 * Whether any record of any website still refers to an image path: an image field, a blog's list
 * of images, or HTML that embeds it. Used before removing a file, so sharing a path is safe.
 */
export async function imagePathInUse(db: DbHandle, path: string): Promise<boolean> {
  const quoted = `%${JSON.stringify(path).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const inside = `%${path.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const like = (column: string, pattern: string) => sql<SqlBool>`${sql.ref(column)} like ${pattern} escape '\\'`;
  const blog = await db
    .selectFrom('blogs')
    .select('info_id')
    .where((eb) =>
      eb.or([
        eb('info_img', '=', path),
        like('info_more_images', quoted),
        like('info_fulltext', inside),
        like('info_summary', inside),
        like('info_object', inside),
      ]),
    )
    .limit(1)
    .executeTakeFirst();
  if (blog) return true;
  const page = await db
    .selectFrom('pages')
    .select('page')
    .where((eb) =>
      eb.or([
        ...(['page_bg', 'page_banner', 'page_titleimg', 'page_menuimg', 'page_ogimage', 'page_submenu_img'] as const).map((c) =>
          eb(c, '=', path),
        ),
        ...['page_html_content', 'page_html_intro', 'page_html_footer', 'page_html_zone2', 'page_css'].map((c) => like(c, inside)),
      ]),
    )
    .limit(1)
    .executeTakeFirst();
  return page !== undefined;
}

/** Which of `paths` a blog's image rows name (indexed: the cheap first check of the start-up sweep). */
export async function pathsWithImageRows(db: DbHandle, paths: readonly string[]): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const rows = await db.selectFrom('blog_images').select('path').distinct().where('path', 'in', paths).execute();
  return new Set(rows.map((r) => r.path));
}
