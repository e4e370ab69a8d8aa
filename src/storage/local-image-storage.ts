import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../private-files.js';
import {
  type CachedVariant,
  type ImageStorage,
  isImageName,
  isVariantKey,
  overBudget,
  type StagedImage,
  type StoredImage,
  thumbnailNameOf,
  type VariantCacheLimits,
} from './image-storage.js';

function isMissing(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === 'ENOENT';
}

/** The paths of a folder's entries whose names pass `keep`; none if the folder does not exist yet. */
async function filesIn(dir: string, keep: (name: string) => boolean): Promise<string[]> {
  try {
    return (await readdir(dir)).filter(keep).map((name) => path.join(dir, name));
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

function isPart(name: string): boolean {
  return name.endsWith('.part');
}

/** A variant is written in well under a second: a part file older than this was left by a process that died writing it. */
const ABANDONED_PART_MS = 10 * 60 * 1000;

/** Removes the files last written before `before` (ms since the epoch); how many it removed. */
async function removeOlder(files: readonly string[], before: number): Promise<number> {
  let removed = 0;
  for (const file of files) {
    try {
      if ((await stat(file)).mtimeMs >= before) continue;
      await unlink(file);
      removed++;
    } catch (error) {
      // Another node may have removed it first.
      if (!isMissing(error)) throw error;
    }
  }
  return removed;
}

/**
 * Images in a local folder (DATA_DIR/images by default). Staged files go to `.staging/` inside the
 * same folder, so a commit is an atomic rename on one file system and a half-written file never has
 * a public name. Only generated names are accepted, which rules out path traversal.
 */
export class LocalImageStorage implements ImageStorage {
  readonly inDatabase = false;
  private readonly staging: string;
  /** `.variants/<image name>/<variant key>`: a file's mtime is its last use (for the LRU). */
  private readonly variants: string;
  private ready: Promise<unknown> | undefined;

  /** `clock`: the time a variant's use is recorded at (tests hand in their own). */
  constructor(
    private readonly root: string,
    private readonly clock: () => number = Date.now,
  ) {
    this.staging = path.join(root, '.staging');
    this.variants = path.join(root, '.variants');
  }

  private ensureFolders(): Promise<unknown> {
    this.ready ??= mkdir(this.staging, { recursive: true, mode: PRIVATE_DIR_MODE });
    return this.ready;
  }

  private fileOf(name: string): string {
    if (!isImageName(name)) throw new Error(`not an image name: ${name}`);
    return path.join(this.root, name);
  }

  async stage(chunks: AsyncIterable<Uint8Array>): Promise<StagedImage> {
    await this.ensureFolders();
    const token = `${randomBytes(16).toString('hex')}.part`;
    const file = path.join(this.staging, token);
    const out = createWriteStream(file, { flags: 'wx', mode: PRIVATE_FILE_MODE });
    try {
      await pipeline(Readable.from(chunks), out);
    } catch (error) {
      // pipeline rejects as soon as the source fails, while the file may still be opening: wait
      // for the stream to close, or the unlink can run first and the file appear after it.
      if (!out.closed) await once(out, 'close').catch(() => {});
      await unlink(file).catch(() => {});
      throw error;
    }
    return { token, bytes: out.bytesWritten };
  }

  /**
   * Removes staged files not written to since `before`. An upload in progress keeps its file's
   * mtime fresh, so an old one was left by a process killed mid-upload, not written by another node
   * sharing the folder.
   */
  async removeAbandoned(before: number): Promise<number> {
    return removeOlder(await filesIn(this.staging, isPart), before);
  }

  /** A rename keeps the mtime, so a committed file's age is its upload's. */
  async *committedBefore(before: number): AsyncIterable<string> {
    for (const file of await filesIn(this.root, isImageName)) {
      try {
        if ((await stat(file)).mtimeMs < before) yield path.basename(file);
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
    }
  }

  async commit(staged: StagedImage, name: string): Promise<void> {
    await rename(path.join(this.staging, staged.token), this.fileOf(name));
  }

  async discard(staged: StagedImage): Promise<void> {
    await unlink(path.join(this.staging, staged.token)).catch(() => {});
  }

  async remove(name: string): Promise<void> {
    // The image last: a removal cut short is repeated by the sweep, which finds the image.
    for (const each of [thumbnailNameOf(name), name]) {
      await rm(this.variantsOf(each), { recursive: true, force: true });
      try {
        await unlink(this.fileOf(each));
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
    }
  }

  async readStaged(staged: StagedImage): Promise<Buffer> {
    return readFile(path.join(this.staging, staged.token));
  }

  private variantsOf(name: string): string {
    if (!isImageName(name)) throw new Error(`not an image name: ${name}`);
    return path.join(this.variants, name);
  }

  async readVariant(name: string, key: string): Promise<Buffer | undefined> {
    if (!isImageName(name) || !isVariantKey(key)) return undefined;
    const file = path.join(this.variantsOf(name), key);
    try {
      const data = await readFile(file);
      const now = new Date(this.clock());
      await utimes(file, now, now).catch(() => {});
      return data;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async writeVariant(name: string, key: string, data: Buffer, limits: VariantCacheLimits): Promise<void> {
    if (!isVariantKey(key)) throw new Error(`not a variant key: ${key}`);
    if (data.length > Math.min(limits.bytesPerImage, limits.bytes)) return;
    const dir = this.variantsOf(name);
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    // Written aside and renamed, so a reader on another node never sees half a variant.
    const part = path.join(dir, `.${randomBytes(8).toString('hex')}.part`);
    const now = new Date(this.clock());
    try {
      await writeFile(part, data, { mode: PRIVATE_FILE_MODE });
      await utimes(part, now, now);
      await rename(part, path.join(dir, key));
    } catch (error) {
      await unlink(part).catch(() => {});
      throw error;
    }
    // A process killed mid-write leaves its part behind; one this old is no write in progress.
    await removeOlder(await filesIn(dir, isPart), this.clock() - ABANDONED_PART_MS);
    const kept = { name, key };
    await this.drop(overBudget(await this.cachedIn(name), limits.perImage, limits.bytesPerImage, kept));
    // The total over every image: a listing of the cache, which only a new variant (rate-limited,
    // and made one at a time) pays for.
    const everyImage = await filesIn(this.variants, isImageName);
    const all = (await Promise.all(everyImage.map((dir) => this.cachedIn(path.basename(dir))))).flat();
    await this.drop(overBudget(all, Number.POSITIVE_INFINITY, limits.bytes, kept));
  }

  /** An image's variants with their sizes and last uses (mtimes). */
  private async cachedIn(name: string): Promise<CachedVariant[]> {
    const files = await filesIn(this.variantsOf(name), isVariantKey);
    const found = await Promise.all(
      files.map((file) =>
        stat(file).then(
          (info): CachedVariant => ({ name, key: path.basename(file), bytes: info.size, usedAt: info.mtimeMs }),
          () => undefined,
        ),
      ),
    );
    return found.filter((each) => each !== undefined);
  }

  private async drop(variants: readonly CachedVariant[]): Promise<void> {
    await Promise.all(variants.map((v) => unlink(path.join(this.variantsOf(v.name), v.key)).catch(() => {})));
  }

  async exists(name: string): Promise<boolean> {
    if (!isImageName(name)) return false;
    try {
      return (await stat(this.fileOf(name))).isFile();
    } catch {
      return false;
    }
  }

  async open(name: string): Promise<StoredImage | undefined> {
    if (!isImageName(name)) return undefined;
    // Open first, then stat the handle: a file removed in between is either served whole or not at all.
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(this.fileOf(name), 'r');
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    const info = await handle.stat();
    if (!info.isFile()) {
      await handle.close();
      return undefined;
    }
    return { stream: handle.createReadStream(), bytes: info.size, modified: info.mtime };
  }
}
