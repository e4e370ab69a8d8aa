import type { Static } from 'typebox';
import type { DbHandle } from '../../db/schema.js';
import { now } from '../../db/time.js';
import { inTransaction } from '../../db/transaction.js';
import { BadRequestError, ValidationError } from '../../errors.js';
import type { Precondition } from '../../http/representation.js';
import type { MaybePromise } from '../../maybe-async.js';
import { type ImageProcessor, type ImageRules, NO_RULES } from '../../storage/image-processor.js';
import type { ImageStorage } from '../../storage/image-storage.js';
import type { ActorRef, ChangeLog } from '../history/change-log.js';
import { pageExists } from '../shared/content.queries.js';
import type { Listed, Saved } from '../shared/envelope.js';
import { lockImageReferences } from '../shared/image-references.js';
import { listWindow, queryBoolean } from '../shared/schemas.js';
import { blogSearchText } from '../shared/search-text.js';
import { slugify } from '../shared/slug.js';
import type { StoredItem, StoredRecord } from '../shared/stored.js';
import { listStored } from '../shared/stored-lists.js';
import { findForWrite, getRecord, getStored } from '../shared/stored-records.js';
import { deleteLogAndQueue, storeLogAndQueue } from '../shared/stored-writes.js';
import { BLOG_FILENAME, uniqueName } from '../shared/unique-name.js';
import { type BlogInput, COPIED_FIELDS, imageColumns, type Stored, storedChanges } from './blog.columns.js';
import { BLOG_FIELDS, type BlogField } from './blog.fields.js';
import { rulesOfPage } from './blog.image-rules.js';
import { type ImagePlan, planImages } from './blog.images.js';
import { type BlogRecord, toBlogRecord } from './blog.record.js';
import * as repo from './blog.repository.js';
import { BLOGS } from './blog.repository.js';
import type { BlogQuery } from './blog.schemas.js';
import type { BlogRow } from './blog.table.js';
import { removeUnused } from './image-cleanup.js';
import { StagedUploads } from './staged-uploads.js';

export type { BlogInput } from './blog.columns.js';
export type { BlogRecord } from './blog.record.js';

/** A list's query string as the route schema validated it (and coerced its numbers). */
export type BlogListQuery = Static<typeof BlogQuery>;

export interface BlogDeps {
  readonly db: DbHandle;
  readonly images: ImageStorage;
  /** What each write's change is logged in, and its webhook deliveries queued through. */
  readonly changeLog: ChangeLog;
  /** Applies the page's image rules to uploads; a write with uploads and no processor is refused. */
  readonly processor?: ImageProcessor;
  /** Reports a file that could not be removed after a successful write (the write stands). */
  readonly warn?: (message: string, error: unknown) => void;
}

interface SaveOptions {
  /** The form's images, staged by the caller (withStagedUploads), which removes those not kept. */
  readonly uploads?: StagedUploads;
  readonly migrate?: boolean;
  readonly precondition?: Precondition | undefined;
  /** The page a new blog without `page` goes to: the API credential's default page. */
  readonly defaultPage?: number | undefined;
  /** Aborted when the client has gone: uploads not yet processed are then refused, and nothing is written. */
  readonly signal?: AbortSignal | undefined;
}

const today = () => now().slice(0, 10);

/** A list of stored records: the route joins their texts, the list's ETag comes from their tags. */
export async function listBlogs(db: DbHandle, siteId: number, query: BlogListQuery): Promise<Listed<StoredItem>> {
  const window = listWindow(query);
  const { publicContentOnly, ...filter } = query;
  const publicOn = queryBoolean(publicContentOnly) ? today() : undefined;
  return listStored(db, BLOGS, siteId, { ...filter, publicOn }, window, query);
}

/** One blog as stored: its JSON text and ETag; at once when the read is (preparedLookup). */
export function getStoredBlog(db: DbHandle, siteId: number, id: number): MaybePromise<StoredRecord> {
  return getStored(db, BLOGS, siteId, id);
}

/** One blog as an object (MCP): the stored text, parsed. */
export async function getBlog(db: DbHandle, siteId: number, id: number): Promise<BlogRecord> {
  return getRecord(db, BLOGS, siteId, id);
}

async function checkPage(db: DbHandle, siteId: number, page: number): Promise<void> {
  if (!(await pageExists(db, siteId, page))) {
    throw new ValidationError([repo.noSuchPage(page)]);
  }
}

function uniqueFilename(db: DbHandle, siteId: number, wanted: string, self?: number): Promise<string> {
  return uniqueName(db, BLOG_FILENAME, siteId, wanted, self);
}

/**
 * The rules of the page the write leaves the blog on: the one the body names, else the blog's own.
 * Read before the write's transaction; a page whose rules change meanwhile is the same race as a
 * page edited just after the upload, which `cms images reprocess` settles.
 */
async function rulesOfWrite(db: DbHandle, siteId: number, input: BlogInput): Promise<ImageRules> {
  const page = input.page ?? (input.id !== undefined ? await repo.pageOfBlog(db, siteId, input.id) : undefined);
  const fields = page === undefined ? undefined : await repo.pageImageFields(db, siteId, page);
  // No such page: the write is refused with a 400 naming `page` in its transaction.
  return fields ? rulesOfPage(fields) : NO_RULES;
}

/**
 * POST: insert without `id`, update with it. The record and its uploaded files succeed or fail
 * together (StagedUploads.save): the files the blog shows get their public names as the last step
 * of the transaction; the caller's withStagedUploads removes every other. Files the blog stopped
 * showing are removed after the commit when nothing else refers to them.
 */
export async function saveBlog(
  deps: BlogDeps,
  siteId: number,
  input: BlogInput,
  actor: ActorRef,
  options: SaveOptions = {},
): Promise<Saved<BlogRecord>> {
  if (input.id !== undefined && input.info_id !== undefined && input.info_id !== input.id) {
    throw new BadRequestError(
      `The body names two blogs: id ${input.id} and info_id ${input.info_id}. Send the blog to update in one of them, or both with the same number.`,
    );
  }
  if (input.id === undefined) options.precondition?.(undefined);
  const changes = storedChanges(input);
  const migrate = Boolean(options.migrate || input.migrateMode === true || input.migrateMode === 1);
  // Without uploads nothing is staged, so there is nothing to release.
  const uploads = options.uploads ?? new StagedUploads(deps.images);
  if (uploads.images.length > 0) {
    if (!deps.processor) throw new Error('saveBlog with uploads needs an image processor');
    // Before the transaction: image work takes far longer than the write, and SQLite has one writer.
    await uploads.process(deps.processor, await rulesOfWrite(deps.db, siteId, input), options.signal);
  }
  const outcome = await uploads.save(deps.db, async (trx) => {
    // Before looking the image up: a clean-up cannot then remove it before this write commits.
    await lockImageReferences(trx, 'shared');
    const known = input.info_img && input.info_img !== '' ? await repo.findImageByPath(trx, siteId, String(input.info_img)) : undefined;
    const imageRequest = {
      uploads: uploads.images,
      migrate,
      known,
      ...(input.info_img !== undefined ? { info_img: String(input.info_img) } : {}),
      ...(input.info_more_images !== undefined ? { info_more_images: input.info_more_images } : {}),
    };
    const result =
      input.id === undefined
        ? await insert(trx, deps.changeLog, siteId, changes, imageRequest, actor, options.defaultPage)
        : await update(trx, deps.changeLog, siteId, input.id, changes, imageRequest, actor, options.precondition);
    // Recorded with the record, so only this website's records keep its uploads stored.
    await repo.insertImageOwners(
      trx,
      siteId,
      result.plan.commit.map((upload) => upload.name),
    );
    const saved = { record: result.record, etag: result.etag, created: input.id === undefined };
    return { result: { saved, dropped: result.plan.dropped }, commit: result.plan.commit };
  });
  await removeUnused(deps, outcome.dropped);
  return outcome.saved;
}

type ImageRequestOf = Parameters<typeof planImages>[1];

async function insert(
  db: DbHandle,
  changeLog: ChangeLog,
  siteId: number,
  changes: Stored,
  images: ImageRequestOf,
  actor: ActorRef,
  defaultPage: number | undefined,
) {
  if (changes.page === undefined) {
    if (defaultPage === undefined) {
      throw new ValidationError([
        { field: 'page', message: 'is required: the page that holds the blog (or use an API credential that has a default page)' },
      ]);
    }
    if (!(await pageExists(db, siteId, defaultPage))) {
      throw new ValidationError([
        { field: 'page', message: `is required: the API credential's default page ${defaultPage} no longer exists` },
      ]);
    }
    changes.page = defaultPage;
  }
  await checkPage(db, siteId, Number(changes.page));
  if (typeof changes.info_title !== 'string' || changes.info_title.trim() === '') {
    throw new ValidationError([{ field: 'info_title', message: 'is required: a new blog needs a title' }]);
  }
  const plan = planImages({ info_img: '', info_img_json: null, info_more_images: [], rows: [] }, images);
  const at = now();
  const blank = Object.fromEntries(COPIED_FIELDS.map((f) => [f, BLOG_FIELDS[f].kind === 'text' ? '' : 0]));
  const row = {
    ...blank,
    info_show: 'Y',
    info_date: today(),
    ...changes,
    ...imageColumns(plan),
    info_timestamp: at,
    info_comment_count: 0,
    info_blogcnt: 0,
    cid: siteId,
    site_search_keywords_updated: changes.site_search_keywords ? at : '',
  } as Omit<BlogRow, 'info_id'>;
  if (!row.info_filename) row.info_filename = await uniqueFilename(db, siteId, slugify(row.info_title, 'blog'));
  const id = await repo.insertBlog(db, { ...row, site_id: siteId, search_text: blogSearchText(row) });
  await saveImageRows(db, siteId, id, plan);
  return { ...(await storeLogAndQueue(db, changeLog, BLOGS, siteId, id, 'create', actor)), plan };
}

/** The blog's image originals as the plan leaves them (migrateMode dedups against these). */
function saveImageRows(db: DbHandle, siteId: number, id: number, plan: ImagePlan): Promise<void> {
  return repo.replaceBlogImages(
    db,
    siteId,
    id,
    plan.rows.map((r) => ({ ...r, site_id: siteId, info_id: id })),
  );
}

async function update(
  db: DbHandle,
  changeLog: ChangeLog,
  siteId: number,
  id: number,
  changes: Stored,
  images: ImageRequestOf,
  actor: ActorRef,
  precondition?: Precondition,
) {
  const currentRow = await findForWrite(db, BLOGS, siteId, id, precondition);
  const current = toBlogRecord(currentRow);
  if (changes.page !== undefined && changes.page !== currentRow.page) await checkPage(db, siteId, Number(changes.page));
  if (changes.info_filename === '') {
    changes.info_filename = await uniqueFilename(db, siteId, slugify(String(changes.info_title ?? currentRow.info_title), 'blog'), id);
  }
  const rows = await repo.listBlogImages(db, siteId, id);
  const plan = planImages({ ...current, rows }, images);
  const wanted: Stored = { ...changes, ...imageColumns(plan) };
  // Only what really changes is written: a repeated request leaves the record, info_timestamp included, as it was.
  const diff: Stored = {};
  for (const [field, value] of Object.entries(wanted)) {
    if (currentRow[field as BlogField] !== value) diff[field] = value;
  }
  if (Object.keys(diff).length === 0) return { record: current, etag: currentRow.etag, plan };
  const at = now();
  if (diff.site_search_keywords !== undefined) diff.site_search_keywords_updated = at;
  const merged = { ...currentRow, ...diff } as BlogRow;
  await repo.updateBlog(db, siteId, id, { ...diff, info_timestamp: at, search_text: blogSearchText(merged) });
  if (diff.info_img !== undefined || diff.info_more_images !== undefined) {
    await saveImageRows(db, siteId, id, plan);
  }
  return { ...(await storeLogAndQueue(db, changeLog, BLOGS, siteId, id, 'update', actor)), plan };
}

/**
 * DELETE: the blog, its image rows, and then its files that nothing else uses. Joins a caller's
 * transaction like saveBlog; files are then kept (removeUnused).
 */
export async function deleteBlog(deps: BlogDeps, siteId: number, id: number, actor: ActorRef, precondition?: Precondition): Promise<void> {
  const removed = await inTransaction(deps.db, async (trx) => {
    const row = await findForWrite(trx, BLOGS, siteId, id, precondition);
    const record = toBlogRecord(row);
    const rows = await repo.listBlogImages(trx, siteId, id);
    await deleteLogAndQueue(trx, deps.changeLog, BLOGS, siteId, id, row, actor);
    return [record.info_img, ...record.info_more_images, ...rows.map((r) => r.path)].filter((p) => p !== '');
  });
  await removeUnused(deps, [...new Set(removed)]);
}
