/**
 * The staged images of one write: uploaded (or, for `cms images reprocess`, copied from storage)
 * and not yet stored under a public name. One object stages them, checks them, processes them
 * under the page's rules, names the ones the saved record shows as the last step of the write's
 * transaction, and removes all the rest, whichever way the write ends: saved, refused (a bad
 * file, a bad record, a failed If-Match), a database error, a client gone or a shutdown (the
 * processor refuses work in both). withStagedUploads is the one way to get one, and releases it.
 */
import { imageSize } from 'image-size';
import type { Config } from '../../config.js';
import type { DbHandle } from '../../db/schema.js';
import { inTransaction } from '../../db/transaction.js';
import { PayloadTooLargeError, UnsupportedMediaTypeError } from '../../errors.js';
import type { ImageProcessor, ImageRules } from '../../storage/image-processor.js';
import { IMAGE_PATH_PREFIX, type ImageStorage, newImageName, type StagedImage, thumbnailNameOf } from '../../storage/image-storage.js';
import { INT32_MAX } from '../shared/schemas.js';
import { rulesKey } from './blog.image-rules.js';
import type { ReceivedImage } from './blog.images.js';
import type { ImageRole } from './blog.table.js';
import { ACCEPTED, type Inspection, inspected } from './upload-inspection.js';

/** A file of a form: its role, the field it came in and the name the client gave it. */
interface IncomingFile {
  readonly role: ImageRole;
  readonly field: string;
  readonly originalName: string;
}

type UploadLimits = Pick<Config['uploads'], 'maxFileBytes' | 'maxPixels'>;

/** What a write's transaction returns: its result, and the images the saved record shows. */
export interface SavedWith<T> {
  readonly result: T;
  readonly commit: readonly ReceivedImage[];
}

/** How a form's file is named in errors. */
export const fileLabel = (file: { field: string; originalName: string }) => `${file.field} "${file.originalName}"`;

function validSide(pixels: number): boolean {
  return Number.isInteger(pixels) && pixels >= 1 && pixels <= INT32_MAX;
}

async function* bytes(data: Buffer): AsyncGenerator<Buffer> {
  yield data;
}

export class StagedUploads {
  /** Staged and not yet discarded, nor named in a transaction that committed. */
  private readonly staged = new Set<StagedImage>();
  /** Names given in a transaction that has not committed: a file storage has already renamed them. */
  private named: string[] = [];
  private received: ReceivedImage[] = [];

  constructor(private readonly storage: ImageStorage) {}

  /** The images staged so far; after process(), as processed. */
  get images(): readonly ReceivedImage[] {
    return this.received;
  }

  private async stage(chunks: AsyncIterable<Buffer>): Promise<StagedImage> {
    const staged = await this.storage.stage(chunks);
    this.staged.add(staged);
    return staged;
  }

  private async discard(staged: StagedImage): Promise<void> {
    this.staged.delete(staged);
    await this.storage.discard(staged);
  }

  /**
   * Stages a form's file as its bytes arrive, refusing it by its bytes (upload-inspection.ts) and
   * then by the size its header claims.
   */
  async receive(file: IncomingFile, chunks: AsyncIterable<Buffer>, limits: UploadLimits): Promise<ReceivedImage> {
    const label = fileLabel(file);
    const found: Partial<Inspection> = {};
    const staged = await this.stage(inspected(chunks, label, limits.maxFileBytes, found));
    const { sha256, bytes, mime, head } = found as Inspection;
    let size: { width: number; height: number } | undefined;
    try {
      size = imageSize(head);
    } catch {}
    // A header cut or forged can claim any size; no format allows more than 2³¹−1 pixels a side
    // (PNG's limit, the others' are lower), which is also what the integer columns hold.
    if (!size || !validSide(size.width) || !validSide(size.height)) {
      throw new UnsupportedMediaTypeError(`${label}: the ${mime} image cannot be read (${ACCEPTED}).`);
    }
    // From the header, before anything decodes it: a small file may claim a huge picture, and
    // decoding allocates what the header claims.
    if (size.width * size.height > limits.maxPixels) {
      throw new PayloadTooLargeError(
        `${label} is ${size.width}×${size.height} pixels; images may have at most ${limits.maxPixels} pixels (UPLOAD_MAX_PIXELS).`,
      );
    }
    const name = newImageName(mime);
    const image: ReceivedImage = {
      role: file.role,
      staged,
      name,
      path: `${IMAGE_PATH_PREFIX}${name}`,
      originalName: file.originalName,
      field: file.field,
      sha256,
      bytes,
      width: size.width,
      height: size.height,
      type: mime,
      rules: '',
    };
    this.received.push(image);
    return image;
  }

  /** A stored image staged again under a new name, to be processed anew (it was checked when uploaded). */
  async restage(chunks: AsyncIterable<Buffer>, image: Omit<ReceivedImage, 'staged' | 'name' | 'path'>): Promise<ReceivedImage> {
    const staged = await this.stage(chunks);
    const name = newImageName(image.type);
    const restaged: ReceivedImage = { ...image, staged, name, path: `${IMAGE_PATH_PREFIX}${name}` };
    this.received.push(restaged);
    return restaged;
  }

  /**
   * Every image made to follow `rules` (blog.image-rules.ts), one at a time: the processor bounds
   * the whole process's concurrency, and one request's files should not take every slot. An image
   * the processor changed is staged anew, its thumbnail beside it, and the original is discarded;
   * the original's file name and SHA-256 stay with it, as migrateMode recognises an original by
   * them. `signal` aborts when the client has gone: the images not yet made are then refused.
   */
  async process(processor: ImageProcessor, rules: ImageRules, signal?: AbortSignal): Promise<readonly ReceivedImage[]> {
    const done: ReceivedImage[] = [];
    for (const image of this.received) {
      const role = image.role === 'primary' ? 'The primary image' : 'An additional image';
      const label = `${role} "${image.originalName}"${image.field ? ` (form field ${image.field})` : ''}`;
      const made = await processor.process(() => this.storage.readStaged(image.staged), image.type, rules, label, signal);
      const staged = made.full.changed ? await this.stage(bytes(made.full.data)) : image.staged;
      const thumbnail = made.thumbnail && {
        staged: await this.stage(bytes(made.thumbnail.data)),
        width: made.thumbnail.width,
        height: made.thumbnail.height,
      };
      if (made.full.changed) await this.discard(image.staged);
      done.push({
        ...image,
        staged,
        bytes: made.full.data.length,
        width: made.full.width,
        height: made.full.height,
        thumbnail,
        rules: rulesKey(rules),
      });
    }
    this.received = done;
    return done;
  }

  /**
   * Runs `write` in a transaction whose last step before COMMIT gives the images it returns their
   * public names: a database storage names them in that transaction, so they become visible with
   * the record and a rollback returns them to staged; a file storage renames them, and release()
   * removes them again when the COMMIT fails. A write without images may join a caller's
   * transaction (the demo seed); one with images may not: the last-step guarantee cannot hold for
   * a COMMIT the caller makes later.
   */
  async save<T>(db: DbHandle, write: (trx: DbHandle) => Promise<SavedWith<T>>): Promise<T> {
    if (db.isTransaction && this.received.length > 0) throw new Error('a write with uploads must own its transaction');
    const kept: StagedImage[] = [];
    const result = await inTransaction(db, async (trx) => {
      const { result, commit } = await write(trx);
      for (const image of commit) {
        await this.storage.commit(image.staged, image.name, trx);
        this.named.push(image.name);
        kept.push(image.staged);
        if (image.thumbnail) {
          await this.storage.commit(image.thumbnail.staged, thumbnailNameOf(image.name), trx);
          kept.push(image.thumbnail.staged);
        }
      }
      return result;
    });
    for (const staged of kept) this.staged.delete(staged);
    this.named = [];
    return result;
  }

  /**
   * Removes what no committed write kept: the images named in a transaction that did not commit
   * (with their thumbnails), and every staged file. Discarding a staged file a rollback returned
   * to staged is what removes it from a database storage. Best effort: it never throws.
   */
  async release(): Promise<void> {
    const named = this.named;
    const staged = [...this.staged];
    this.named = [];
    this.staged.clear();
    await Promise.all(named.map((name) => this.storage.remove(name).catch(() => {})));
    await Promise.all(staged.map((s) => this.storage.discard(s)));
  }
}

/** Runs `work` with a new StagedUploads, and releases it however `work` ends. */
export async function withStagedUploads<T>(storage: ImageStorage, work: (uploads: StagedUploads) => Promise<T>): Promise<T> {
  const uploads = new StagedUploads(storage);
  try {
    return await work(uploads);
  } finally {
    await uploads.release();
  }
}
