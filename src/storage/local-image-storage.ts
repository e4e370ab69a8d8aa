import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../private-files.js';
import { type ImageStorage, isImageName, isVariantKey, type StagedImage, type StoredImage, thumbnailNameOf } from './image-storage.js';

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

  constructor(private readonly root: string) {
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
      const now = new Date();
      await utimes(file, now, now).catch(() => {});
      return data;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async writeVariant(name: string, key: string, data: Buffer, keep: number): Promise<void> {
    if (!isVariantKey(key)) throw new Error(`not a variant key: ${key}`);
    const dir = this.variantsOf(name);
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    // Written aside and renamed, so a reader on another node never sees half a variant.
    const part = path.join(dir, `.${randomBytes(8).toString('hex')}.part`);
    try {
      await writeFile(part, data, { mode: PRIVATE_FILE_MODE });
      await rename(part, path.join(dir, key));
    } catch (error) {
      await unlink(part).catch(() => {});
      throw error;
    }
    const names = await filesIn(dir, () => true);
    // A process killed mid-write leaves its part behind; one this old is no write in progress.
    const parts = names.filter((file) => isPart(path.basename(file)));
    await removeOlder(parts, Date.now() - ABANDONED_PART_MS);
    const kept = names.filter((file) => isVariantKey(path.basename(file)));
    if (kept.length <= keep) return;
    const used = await Promise.all(
      kept.map(async (file) => ({
        file,
        at: await stat(file).then(
          (s) => s.mtimeMs,
          () => 0,
        ),
      })),
    );
    used.sort((a, b) => b.at - a.at);
    await Promise.all(used.slice(keep).map(({ file }) => unlink(file).catch(() => {})));
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
