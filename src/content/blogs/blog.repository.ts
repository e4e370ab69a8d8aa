import { type Expression, type ExpressionBuilder, type Insertable, type SqlBool, sql, type Updateable } from 'kysely';
import type { DialectName } from '../../db/database.js';
import { refusedAs } from '../../db/errors.js';
import type { Database, DbHandle } from '../../db/schema.js';
import { hiddenPages } from '../shared/content.queries.js';
import { anyListItemMatches, fullTextMatches, textMatches } from '../shared/filters.js';
import type { MatchType } from '../shared/schemas.js';
import { storedResource, storedText } from '../shared/stored-resource.js';
import { BLOG_BODY_FIELDS, BLOG_FIELDS, type BlogField } from './blog.fields.js';
import type { PageImageFields } from './blog.image-rules.js';
import { blogSortKeys, toBlogRecord } from './blog.record.js';
import type { BlogImageRow, BlogsTable } from './blog.table.js';

type NewBlogRow = Insertable<BlogsTable>;
type BlogChanges = Updateable<BlogsTable>;

interface BlogFilter {
  id?: number;
  page?: number;
  title?: string;
  filename?: string;
  tags?: string;
  /** The same as tags; both may be sent, and then both must hold. */
  tag?: string;
  keywords?: string;
  matchType?: MatchType;
  /** Today's date (YYYY-MM-DD, UTC) when only public blogs are wanted. */
  publicOn?: string;
}

/** The conditions of a filter, beside the website's: none when the list is every blog of the website. */
function conditionsOf(eb: ExpressionBuilder<Database, 'blogs'>, dialect: DialectName, siteId: number, f: BlogFilter) {
  const conditions: Expression<SqlBool>[] = [];
  if (f.id !== undefined) conditions.push(eb('blogs.info_id', '=', f.id));
  if (f.page !== undefined) conditions.push(eb('blogs.page', '=', f.page));
  if (f.title !== undefined) conditions.push(textMatches(dialect, 'blogs.info_title', f.title, f.matchType));
  if (f.filename !== undefined) conditions.push(textMatches(dialect, 'blogs.info_filename', f.filename, f.matchType));
  for (const tags of [f.tags, f.tag]) {
    if (tags !== undefined) conditions.push(anyListItemMatches(dialect, 'blogs.info_tags', tags, f.matchType));
  }
  if (f.keywords !== undefined) conditions.push(fullTextMatches(dialect, 'blogs', 'info_id', f.keywords));
  if (f.publicOn !== undefined) {
    // Dates are YYYY-MM-DD text, so comparing the strings compares the days.
    conditions.push(eb('blogs.info_show', '=', 'Y'));
    conditions.push(eb.or([eb('blogs.info_hideuntil', '=', ''), eb('blogs.info_hideuntil', '<=', f.publicOn)]));
    conditions.push(eb.or([eb('blogs.info_date', '=', ''), eb('blogs.info_date', '<=', f.publicOn)]));
    conditions.push(sql<SqlBool>`blogs.page not in ${hiddenPages(siteId)}`);
  }
  return conditions;
}

/** The by-id read of a blog's stored record: preparedLookup prepares it once (see `storedById`). */
function storedByIdQuery(db: DbHandle, { siteId, id }: { siteId: number; id: number }) {
  return db
    .selectFrom('blogs')
    .select([storedText(db, 'blogs'), 'etag'])
    .where('site_id', '=', siteId)
    .where('info_id', '=', id);
}

const BLOG_ID = { column: 'info_id', type: 'int' } as const;
const NEWEST_BLOG_FIRST = { ...BLOG_ID, desc: true } as const;

/**
 * Blogs to the shared stored-record queries. Listed by info_order, newest date first within an
 * order, by default; each order a client can choose is read from its own index (migration 0014),
 * the id breaking ties. A blog keeps no creation time: ids are given out in the order blogs are
 * created, so `created` is the id order, newest first.
 */
export const BLOGS = storedResource({
  noun: 'blog',
  table: 'blogs',
  id: 'info_id',
  columns: Object.keys(BLOG_FIELDS) as BlogField[],
  fields: { names: [...Object.keys(BLOG_FIELDS), 'id'], ids: ['info_id', 'id'], bodies: BLOG_BODY_FIELDS },
  toRecord: toBlogRecord,
  sortKeys: blogSortKeys,
  storedById: storedByIdQuery,
  orders: {
    order: {
      index: 'blogs_site_order',
      columns: [{ column: 'info_order', type: 'int' }, { column: 'info_date', type: 'text', desc: true }, BLOG_ID],
    },
    // Newest first unless asked otherwise, here and below.
    date: { index: 'blogs_site_date', columns: [{ column: 'info_date', type: 'text', desc: true }, NEWEST_BLOG_FIRST] },
    title: { index: 'blogs_site_title', columns: [{ column: 'title_sort_key', type: 'text' }, BLOG_ID] },
    created: { index: 'blogs_site_id', columns: [NEWEST_BLOG_FIRST] },
    updated: { index: 'blogs_site_updated', columns: [{ column: 'info_timestamp', type: 'text', desc: true }, NEWEST_BLOG_FIRST] },
    id: { index: 'blogs_site_id', columns: [BLOG_ID] },
  },
  conditions: conditionsOf,
  /** Cursors of the blog list: `["b", info_order, info_date, info_id]` of the last blog shown. */
  cursorTag: 'b',
});

/** The refusal of a blog's `page` that is no page of its website, checked first or found by the foreign key. */
export const noSuchPage = (page: unknown) => ({
  field: 'page',
  message: `there is no page ${page} on this website: name one of its pages (GET /api/page lists them)`,
});

/** A write refused by the filename index, or by the page's foreign key (deleted after it was checked). */
const refusals = (row: { info_filename?: unknown; page?: unknown }) => ({
  unique: `Another blog of this website already has the filename "${row.info_filename}": choose another info_filename, or send it empty to have one made from the title.`,
  foreignKey: noSuchPage(row.page),
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

/** Records `siteId` as the website that uploaded the images `names`, in the transaction that commits them. */
export async function insertImageOwners(db: DbHandle, siteId: number, names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  await db
    .insertInto('image_owners')
    .values(names.map((name) => ({ name, site_id: siteId })))
    .execute();
}

/** The website that uploaded image `name`; undefined when it is not recorded (stored before owners were). */
export async function imageOwner(db: DbHandle, name: string): Promise<number | undefined> {
  const row = await db.selectFrom('image_owners').select('site_id').where('name', '=', name).executeTakeFirst();
  return row?.site_id;
}

export async function deleteImageOwner(db: DbHandle, name: string): Promise<void> {
  await db.deleteFrom('image_owners').where('name', '=', name).execute();
}

/**
 * Whether a record still refers to an image path: an image field, a blog's list of images, or
 * HTML that embeds it, in a record or in a kept revision of one. Only the records of website
 * `siteId` count when it is given (the image's owner), so another website that shows the image
 * cannot keep it stored; any website's when it is not (an image of no known owner), so sharing
 * such a path stays safe. Used before removing a file.
 */
export async function imagePathInUse(db: DbHandle, path: string, siteId?: number): Promise<boolean> {
  const quoted = `%${JSON.stringify(path).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const inside = `%${path.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const like = (column: string, pattern: string) => sql<SqlBool>`${sql.ref(column)} like ${pattern} escape '\\'`;
  const blog = await db
    .selectFrom('blogs')
    .select('info_id')
    .$if(siteId !== undefined, (q) => q.where('site_id', '=', siteId as number))
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
    .$if(siteId !== undefined, (q) => q.where('site_id', '=', siteId as number))
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
  if (page) return true;
  // A kept revision may be restored: its images stay until retention removes the revision.
  const revision = await db
    .selectFrom('content_changes')
    .select('seq')
    .$if(siteId !== undefined, (q) => q.where('site_id', '=', siteId as number))
    .where(like('record_json', inside))
    .limit(1)
    .executeTakeFirst();
  return revision !== undefined;
}

/**
 * Which of `images` (a path with its owner, undefined for none) a blog's image rows name: indexed,
 * the cheap first check of the start-up sweep. A row counts only when it is of the image's owner,
 * or the image has none (imagePathInUse's rule).
 */
export async function pathsWithImageRows(
  db: DbHandle,
  images: ReadonlyArray<{ path: string; owner: number | undefined }>,
): Promise<Set<string>> {
  if (images.length === 0) return new Set();
  const owners = new Map(images.map((i) => [i.path, i.owner]));
  const rows = await db
    .selectFrom('blog_images')
    .select(['path', 'site_id'])
    .distinct()
    .where('path', 'in', [...owners.keys()])
    .execute();
  return new Set(rows.filter((r) => (owners.get(r.path) ?? r.site_id) === r.site_id).map((r) => r.path));
}

/** The owners of those of `names` that have one (imageOwner for a batch). */
export async function imageOwners(db: DbHandle, names: readonly string[]): Promise<Map<string, number>> {
  if (names.length === 0) return new Map();
  const rows = await db.selectFrom('image_owners').select(['name', 'site_id']).where('name', 'in', names).execute();
  return new Map(rows.map((r) => [r.name, r.site_id]));
}

/** A page's image rule fields (spec §2.1); undefined when the website has no such page. */
export async function pageImageFields(db: DbHandle, siteId: number, page: number): Promise<PageImageFields | undefined> {
  return db
    .selectFrom('pages')
    .select(['page_crop_width', 'page_crop_height', 'page_crop_aspect', 'page_crop_aspect_thumbs', 'page_thumb_dimensions'])
    .where('site_id', '=', siteId)
    .where('page', '=', page)
    .executeTakeFirst();
}

/** The page that holds a blog; undefined when there is no such blog. */
export async function pageOfBlog(db: DbHandle, siteId: number, id: number): Promise<number | undefined> {
  const row = await db.selectFrom('blogs').select('page').where('site_id', '=', siteId).where('info_id', '=', id).executeTakeFirst();
  return row?.page;
}
