import type { DbHandle } from '../../db/schema.js';
import { now } from '../../db/time.js';
import type { ImageProcessor, ImageRules } from '../../storage/image-processor.js';
import { type ImageMime, type ImageStorage, imageNameOf } from '../../storage/image-storage.js';
import { type ChangeLog, cliActor } from '../history/change-log.js';
import { lockImageReferences } from '../shared/image-references.js';
import { blogSearchText } from '../shared/search-text.js';
import { findForWrite } from '../shared/stored-records.js';
import { storeLogAndQueue } from '../shared/stored-writes.js';
import { rulesKey, rulesOfPage } from './blog.image-rules.js';
import { metadataOf, processedColumns, type ReceivedImage } from './blog.images.js';
import { toBlogRecord } from './blog.record.js';
import * as repo from './blog.repository.js';
import { BLOGS } from './blog.repository.js';
import type { BlogImageRow, BlogRow } from './blog.table.js';
import { removeImageIfUnused } from './image-cleanup.js';
import { type SavedWith, withStagedUploads } from './staged-uploads.js';

interface ReprocessDeps {
  readonly db: DbHandle;
  readonly images: ImageStorage;
  readonly processor: ImageProcessor;
  readonly changeLog: ChangeLog;
}

interface ReprocessOptions {
  readonly siteId?: number | undefined;
  readonly page?: number | undefined;
  /** Stops between two images (SIGINT in the command); what is done stays done. */
  readonly signal?: AbortSignal | undefined;
  /** Called after each image remade. */
  readonly onImage?: ((path: string, remadeAs: string) => void) | undefined;
}

interface ReprocessResult {
  /** Images whose recorded rules were not today's. */
  readonly checked: number;
  /** Images stored anew and switched to. */
  readonly remade: number;
  /** Images whose file is gone, or whose blog stopped showing them meanwhile: left as they are. */
  readonly skipped: number;
  readonly interrupted: boolean;
}

const BATCH = 100;

type Row = BlogImageRow & { page: number };

/** The blog_images rows in scope after `after` (site, blog, path), with their blog's page. */
async function nextRows(db: DbHandle, options: ReprocessOptions, after: [number, number, string]): Promise<Row[]> {
  let query = db
    .selectFrom('blog_images')
    .innerJoin('blogs', (join) =>
      join.onRef('blogs.info_id', '=', 'blog_images.info_id').onRef('blogs.site_id', '=', 'blog_images.site_id'),
    )
    .selectAll('blog_images')
    .select('blogs.page');
  if (options.siteId !== undefined) query = query.where('blog_images.site_id', '=', options.siteId);
  if (options.page !== undefined) query = query.where('blogs.page', '=', options.page);
  const [site, info, path] = after;
  return query
    .where((eb) =>
      eb.or([
        eb('blog_images.site_id', '>', site),
        eb.and([eb('blog_images.site_id', '=', site), eb('blog_images.info_id', '>', info)]),
        eb.and([eb('blog_images.site_id', '=', site), eb('blog_images.info_id', '=', info), eb('blog_images.path', '>', path)]),
      ]),
    )
    .orderBy('blog_images.site_id')
    .orderBy('blog_images.info_id')
    .orderBy('blog_images.path')
    .limit(BATCH)
    .execute();
}

export async function reprocessImages(deps: ReprocessDeps, options: ReprocessOptions = {}): Promise<ReprocessResult> {
  const rulesByPage = new Map<string, ImageRules>();
  const rulesOf = async (siteId: number, page: number): Promise<ImageRules | undefined> => {
    const key = `${siteId}:${page}`;
    if (!rulesByPage.has(key)) {
      const fields = await repo.pageImageFields(deps.db, siteId, page);
      if (!fields) return undefined;
      rulesByPage.set(key, rulesOfPage(fields));
    }
    return rulesByPage.get(key);
  };
  let checked = 0;
  let remade = 0;
  let skipped = 0;
  let after: [number, number, string] = [0, 0, ''];
  for (;;) {
    const rows = await nextRows(deps.db, options, after);
    for (const row of rows) {
      after = [row.site_id, row.info_id, row.path];
      const rules = await rulesOf(row.site_id, row.page);
      if (!rules || row.rules === rulesKey(rules)) continue;
      if (options.signal?.aborted) return { checked, remade, skipped, interrupted: true };
      checked++;
      const newPath = await reprocessOne(deps, row, rules);
      if (newPath) {
        remade++;
        options.onImage?.(row.path, newPath);
      } else skipped++;
    }
    if (rows.length < BATCH) return { checked, remade, skipped, interrupted: false };
  }
}

/** One image: stored anew, the blog switched to it, the old one removed if unused; its new path, or undefined. */
async function reprocessOne(deps: ReprocessDeps, row: Row, rules: ImageRules): Promise<string | undefined> {
  const oldName = imageNameOf(row.path);
  const stored = oldName ? await deps.images.open(oldName) : undefined;
  if (!oldName || !stored) return undefined;
  const made = await withStagedUploads(deps.images, async (uploads) => {
    await uploads.restage(stored.stream, {
      role: row.role,
      originalName: row.original_name,
      sha256: row.sha256,
      bytes: row.bytes,
      width: row.width,
      height: row.height,
      type: row.type as ImageMime,
      rules: '',
    });
    const [made] = await uploads.process(deps.processor, rules);
    if (!made) throw new Error('an image was staged, none was processed');
    const switched = await uploads.save(deps.db, (trx) => switchImage(trx, deps.changeLog, row, made));
    return switched ? made : undefined;
  });
  if (!made) return undefined;
  await removeImageIfUnused(deps.db, deps.images, oldName);
  return made.path;
}

/**
 * Blog `row.info_id` shows `made` where it showed `row.path`, if it still shows that image; the
 * image is then to be committed with the change.
 */
async function switchImage(trx: DbHandle, changeLog: ChangeLog, row: Row, made: ReceivedImage): Promise<SavedWith<boolean>> {
  await lockImageReferences(trx, 'shared');
  const current = await findForWrite(trx, BLOGS, row.site_id, row.info_id, undefined).catch(() => undefined);
  if (!current) return { result: false, commit: [] };
  const record = toBlogRecord(current);
  const shows = record.info_img === row.path || record.info_more_images.includes(row.path);
  if (!shows) return { result: false, commit: [] };
  const { page: _page, ...oldRow } = row;
  const newRow: BlogImageRow = { ...oldRow, ...processedColumns(made) };
  const changes: Partial<BlogRow> = {
    info_more_images: JSON.stringify(record.info_more_images.map((p) => (p === row.path ? made.path : p))),
  };
  if (record.info_img === row.path) {
    changes.info_img = made.path;
    changes.info_img_json = JSON.stringify(metadataOf(newRow));
  }
  const merged = { ...current, ...changes } as BlogRow;
  await repo.updateBlog(trx, row.site_id, row.info_id, { ...changes, info_timestamp: now(), search_text: blogSearchText(merged) });
  const rows = await repo.listBlogImages(trx, row.site_id, row.info_id);
  await repo.replaceBlogImages(
    trx,
    row.site_id,
    row.info_id,
    rows.map((r) => (r.path === row.path ? newRow : r)),
  );
  await storeLogAndQueue(trx, changeLog, BLOGS, row.site_id, row.info_id, 'update', cliActor('images reprocess'));
  // The remade image is the website's own, as the one it replaces was.
  await repo.insertImageOwners(trx, row.site_id, [made.name]);
  return { result: true, commit: [made] };
}
