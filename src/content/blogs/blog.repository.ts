import { type Insertable, type Kysely, type Selectable, type SqlBool, sql, type Updateable } from 'kysely';
import type { DialectName } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import { hiddenPages } from '../pages/page.repository.js';
import { anyListItemMatches, fullTextMatches, textMatches } from '../shared/filters.js';
import type { MatchType } from '../shared/schemas.js';
import { BLOG_FIELDS, type BlogField } from './blog.fields.js';
import type { BlogImagesTable, BlogsTable } from './blog.table.js';

type Handle = Kysely<Database>;
export type BlogRow = Pick<Selectable<BlogsTable>, BlogField>;
export type NewBlogRow = Insertable<BlogsTable>;
export type BlogChanges = Updateable<BlogsTable>;
export type BlogImageRow = Selectable<BlogImagesTable>;

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

function filtered(db: Handle, dialect: DialectName, siteId: number, f: BlogFilter) {
  return db
    .selectFrom('blogs')
    .where('blogs.site_id', '=', siteId)
    .where((eb) => {
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
      return eb.and(conditions);
    });
}

export async function listBlogs(
  db: Handle,
  dialect: DialectName,
  siteId: number,
  filter: BlogFilter,
  offset: number,
  limit: number,
): Promise<{ rows: BlogRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    filtered(db, dialect, siteId, filter)
      .select(BLOG_COLUMNS.map((c) => `blogs.${c}` as const))
      .orderBy('blogs.info_order')
      .orderBy('blogs.info_date', 'desc')
      .orderBy('blogs.info_id')
      .offset(offset)
      .limit(limit)
      .execute(),
    filtered(db, dialect, siteId, filter)
      .select((eb) => eb.fn.countAll<number>().as('total'))
      .executeTakeFirstOrThrow(),
  ]);
  return { rows: rows as BlogRow[], total: Number(count.total) };
}

/** `lock` takes a row lock (PostgreSQL) so a check and the write after it see the same row. */
export async function findBlog(db: Handle, siteId: number, id: number, lock = false): Promise<BlogRow | undefined> {
  const query = db.selectFrom('blogs').select(BLOG_COLUMNS).where('site_id', '=', siteId).where('info_id', '=', id);
  return (lock ? query.forUpdate() : query).executeTakeFirst();
}

export async function insertBlog(db: Handle, row: NewBlogRow): Promise<number> {
  const inserted = await db.insertInto('blogs').values(row).returning('info_id').executeTakeFirstOrThrow();
  return inserted.info_id;
}

export async function updateBlog(db: Handle, siteId: number, id: number, changes: BlogChanges): Promise<void> {
  await db.updateTable('blogs').set(changes).where('site_id', '=', siteId).where('info_id', '=', id).execute();
}

export async function deleteBlog(db: Handle, siteId: number, id: number): Promise<void> {
  await db.deleteFrom('blogs').where('site_id', '=', siteId).where('info_id', '=', id).execute();
}

export async function countBlogsOnPage(db: Handle, siteId: number, page: number): Promise<number> {
  const row = await db
    .selectFrom('blogs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('site_id', '=', siteId)
    .where('page', '=', page)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Arbitrary class id for pg_advisory_xact_lock(class, site) around choosing an info_filename. */
const FILENAME_LOCK_CLASS = 7302;

export async function lockFilenames(db: Handle, dialect: DialectName, siteId: number): Promise<void> {
  if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(${FILENAME_LOCK_CLASS}, ${siteId})`.execute(db);
}

/** Filenames in use that equal `base` or extend it with a -N suffix. */
export async function filenamesLike(db: Handle, siteId: number, base: string): Promise<string[]> {
  const pattern = `${base.replace(/[\\%_]/g, (c) => `\\${c}`)}-%`;
  const rows = await db
    .selectFrom('blogs')
    .select('info_filename')
    .where('site_id', '=', siteId)
    .where((eb) => eb.or([eb('info_filename', '=', base), sql<SqlBool>`info_filename like ${pattern} escape '\\'`]))
    .execute();
  return rows.map((r) => r.info_filename);
}

export async function listBlogImages(db: Handle, siteId: number, id: number): Promise<BlogImageRow[]> {
  return db.selectFrom('blog_images').selectAll().where('site_id', '=', siteId).where('info_id', '=', id).execute();
}

/** Metadata of an image this website uploaded, by its public path (for info_img set by path). */
export async function findImageByPath(db: Handle, siteId: number, path: string): Promise<BlogImageRow | undefined> {
  return db.selectFrom('blog_images').selectAll().where('site_id', '=', siteId).where('path', '=', path).limit(1).executeTakeFirst();
}

/** Makes the blog's image rows exactly `rows` (the images it shows now). */
export async function replaceBlogImages(db: Handle, siteId: number, id: number, rows: readonly BlogImageRow[]): Promise<void> {
  await db.deleteFrom('blog_images').where('site_id', '=', siteId).where('info_id', '=', id).execute();
  if (rows.length > 0) await db.insertInto('blog_images').values(rows).execute();
}

/**
 * Whether any record of any website still refers to an image path: an image field, a blog's list
 * of images, or HTML that embeds it. Used before removing a file, so sharing a path is safe.
 */
export async function imagePathInUse(db: Handle, path: string): Promise<boolean> {
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
