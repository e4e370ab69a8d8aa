/**
 * Uploads made to follow the rules of the page that will hold the blog (blog.image-rules.ts):
 * each staged original is read, processed (ImageProcessor) and, when that changed it, staged
 * again as the image to commit, with its thumbnail beside it. The original's file name and
 * SHA-256 stay with the upload: migrateMode recognises an original it has seen by them.
 */

import type { DbHandle } from '../../db/schema.js';
import type { ImageProcessor, ImageRules } from '../../storage/image-processor.js';
import { NO_RULES } from '../../storage/image-processor.js';
import type { ImageStorage, StagedImage } from '../../storage/image-storage.js';
import { rulesKey, rulesOfPage } from './blog.image-rules.js';
import type { ReceivedImage } from './blog.images.js';
import { pageImageFields, pageOfBlog } from './blog.repository.js';

/** What processing needs of the service's dependencies. */
interface ProcessingDeps {
  readonly db: DbHandle;
  readonly images: ImageStorage;
  readonly processor?: ImageProcessor | undefined;
}

/**
 * The page the write leaves the blog on: the one the body names, else the blog's own. Read before
 * the write's transaction; a page whose rules change meanwhile is the same race as a page edited
 * just after the upload, which `cms images reprocess` settles.
 */
async function rulesFor(
  deps: ProcessingDeps,
  siteId: number,
  input: { page?: number | undefined; id?: number | undefined },
): Promise<ImageRules> {
  const page = input.page ?? (input.id !== undefined ? await pageOfBlog(deps.db, siteId, input.id) : undefined);
  const fields = page === undefined ? undefined : await pageImageFields(deps.db, siteId, page);
  // No such page: the write is refused with a 400 naming `page` in its transaction.
  return fields ? rulesOfPage(fields) : NO_RULES;
}

/** Stages bytes already in memory. */
function stageBytes(storage: ImageStorage, data: Buffer): Promise<StagedImage> {
  return storage.stage(
    (async function* () {
      yield data;
    })(),
  );
}

/**
 * One upload under `rules`. Whatever fails, what this staged is discarded (the caller discards the
 * original).
 */
export async function processUpload(
  storage: ImageStorage,
  processor: ImageProcessor,
  upload: ReceivedImage,
  rules: ImageRules,
  signal?: AbortSignal,
): Promise<ReceivedImage> {
  const role = upload.role === 'primary' ? 'The primary image' : 'An additional image';
  const label = `${role} "${upload.originalName}"${upload.field ? ` (form field ${upload.field})` : ''}`;
  const made = await processor.process(() => storage.readStaged(upload.staged), upload.type, rules, label, signal);
  const staged: StagedImage[] = [];
  try {
    const full = made.full.changed ? await stageBytes(storage, made.full.data) : upload.staged;
    if (made.full.changed) staged.push(full);
    const thumbnail = made.thumbnail && { staged: await stageBytes(storage, made.thumbnail.data), ...made.thumbnail };
    if (thumbnail) staged.push(thumbnail.staged);
    if (made.full.changed) await storage.discard(upload.staged);
    return {
      ...upload,
      staged: full,
      bytes: made.full.data.length,
      width: made.full.width,
      height: made.full.height,
      thumbnail: thumbnail && { staged: thumbnail.staged, width: thumbnail.width, height: thumbnail.height },
      rules: rulesKey(rules),
    };
  } catch (error) {
    await Promise.all(staged.map((s) => storage.discard(s)));
    throw error;
  }
}

/** Every upload of a write under its page's rules; on failure, whatever was staged is discarded. */
export async function processUploads(
  deps: ProcessingDeps,
  siteId: number,
  input: { page?: number | undefined; id?: number | undefined },
  received: readonly ReceivedImage[],
  signal?: AbortSignal,
): Promise<ReceivedImage[]> {
  if (received.length === 0) return [];
  if (!deps.processor) throw new Error('saveBlog with uploads needs an image processor');
  const rules = await rulesFor(deps, siteId, input);
  const done: ReceivedImage[] = [];
  try {
    // One at a time: the processor bounds the whole process's concurrency, and one request's
    // files should not take every slot.
    for (const upload of received) done.push(await processUpload(deps.images, deps.processor, upload, rules, signal));
    return done;
  } catch (error) {
    await Promise.all(done.flatMap((u) => [u.staged, ...(u.thumbnail ? [u.thumbnail.staged] : [])]).map((s) => deps.images.discard(s)));
    throw error;
  }
}
