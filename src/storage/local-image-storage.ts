import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type ImageStorage, isImageName, type StagedImage, type StoredImage } from './image-storage.js';

function isMissing(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === 'ENOENT';
}

/**
 * Images in a local folder (DATA_DIR/images by default). Staged files go to `.staging/` inside the
 * same folder, so a commit is an atomic rename on one file system and a half-written file never has
 * a public name. Only generated names are accepted, which rules out path traversal.
 */
export class LocalImageStorage implements ImageStorage {
  private readonly staging: string;
  private ready: Promise<unknown> | undefined;

  constructor(private readonly root: string) {
    this.staging = path.join(root, '.staging');
  }

  private ensureFolders(): Promise<unknown> {
    this.ready ??= mkdir(this.staging, { recursive: true });
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
    const out = createWriteStream(file, { flags: 'wx', mode: 0o644 });
    try {
      await pipeline(Readable.from(chunks), out);
    } catch (error) {
      await unlink(file).catch(() => {});
      throw error;
    }
    return { token, bytes: out.bytesWritten };
  }

  async commit(staged: StagedImage, name: string): Promise<void> {
    await rename(path.join(this.staging, staged.token), this.fileOf(name));
  }

  async discard(staged: StagedImage): Promise<void> {
    await unlink(path.join(this.staging, staged.token)).catch(() => {});
  }

  async remove(name: string): Promise<void> {
    try {
      await unlink(this.fileOf(name));
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
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
