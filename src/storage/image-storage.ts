import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { DbHandle } from '../db/schema.js';

/** The image types the service accepts, by their sniffed MIME type, with the extension they are stored under. */
export const IMAGE_TYPES = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/avif': 'avif',
} as const;

export type ImageMime = keyof typeof IMAGE_TYPES;

/** Public URL path prefix under which stored images are served. */
export const IMAGE_PATH_PREFIX = '/images/';

/**
 * Generated names: 32 hex characters and a known extension, or the same with `-thumb` before the
 * extension for that image's thumbnail. Nothing else is ever stored or served.
 */
const NAME = /^[0-9a-f]{32}(-thumb)?\.(jpg|png|gif|webp|avif)$/;
const THUMB = '-thumb';

export function isImageName(name: string): boolean {
  return NAME.test(name);
}

const MIME_OF_EXTENSION = Object.fromEntries(Object.entries(IMAGE_TYPES).map(([mime, ext]) => [ext, mime])) as Record<string, ImageMime>;

/** The MIME type a generated name stands for (its extension was chosen from the sniffed type). */
export function mimeOf(name: string): ImageMime | undefined {
  return MIME_OF_EXTENSION[name.slice(name.lastIndexOf('.') + 1)];
}

export function newImageName(mime: ImageMime): string {
  return `${randomBytes(16).toString('hex')}.${IMAGE_TYPES[mime]}`;
}

/**
 * The thumbnail of an image lives under the image's name with `-thumb` before the extension, so a
 * client finds the thumbnail of any image path (info_more_images included) without a lookup.
 */
export function thumbnailNameOf(name: string): string {
  return name.replace('.', `${THUMB}.`);
}

/** A thumbnail's image; an image's own name for any other. */
export function mainNameOf(name: string): string {
  return name.replace(`${THUMB}.`, '.');
}

/** Variant keys name the parameters an image was made with (`w300-h200-cover-q85.webp`). */
const VARIANT_KEY = /^[a-z0-9][a-z0-9.-]{0,63}$/;

export function isVariantKey(key: string): boolean {
  return VARIANT_KEY.test(key);
}

/** `/images/<name>` → `<name>`, for paths this service generated; anything else → undefined. */
export function imageNameOf(path: string): string | undefined {
  if (!path.startsWith(IMAGE_PATH_PREFIX)) return undefined;
  const name = path.slice(IMAGE_PATH_PREFIX.length);
  return isImageName(name) ? name : undefined;
}

/** A file written under a temporary name: not visible under any public name until committed. */
export interface StagedImage {
  readonly token: string;
  readonly bytes: number;
}

export interface StoredImage {
  readonly stream: Readable;
  readonly bytes: number;
  readonly modified: Date;
}

/**
 * Where uploaded images live. Writes are two-phase so a record and its files succeed or fail
 * together: `stage` streams the bytes to a temporary object, `commit` gives it its public name once
 * the record is saved, `discard` drops it otherwise. Names are generated (see newImageName).
 *
 * Staged objects and committed images that no record shows are what a crash leaves behind;
 * `removeAbandoned` and `committedBefore` let the start-up sweep find them (src/content/blogs/
 * image-cleanup.ts), only past an age that no upload in progress on another node can reach.
 */
export interface ImageStorage {
  stage(chunks: AsyncIterable<Uint8Array>): Promise<StagedImage>;
  /**
   * `within` is the transaction that saves the record showing the image. A storage in the
   * database commits in it, so the record and its image become visible together and a rollback
   * undoes both; a storage elsewhere ignores it (the caller removes the file on a rollback).
   */
  commit(staged: StagedImage, name: string, within?: DbHandle): Promise<void>;
  /** Never throws: a staged object that is already gone is fine. */
  discard(staged: StagedImage): Promise<void>;
  /**
   * Whether the images are in the database. Its `remove` then runs in `within`, the transaction
   * that found the image unused, so the removal commits with that finding or not at all. A file
   * elsewhere cannot be rolled back: it is removed only once that transaction has committed.
   */
  readonly inDatabase: boolean;
  /**
   * Removes a committed image with what is made from it: its thumbnail and the variants of both
   * (they have no life of their own). A missing one is not an error. `within`: see inDatabase.
   */
  remove(name: string, within?: DbHandle): Promise<void>;
  /** The bytes of a staged object, for processing before it is committed. */
  readStaged(staged: StagedImage): Promise<Buffer>;
  exists(name: string): Promise<boolean>;
  open(name: string): Promise<StoredImage | undefined>;
  /** Removes staged objects last written before `before` (ms since the epoch); returns how many. */
  removeAbandoned(before: number): Promise<number>;
  /** Names of committed images last written before `before` (ms since the epoch). */
  committedBefore(before: number): AsyncIterable<string>;
  /**
   * A variant of image `name` made on request (GET /images/<name>?width=…), and marks it used now.
   * Variants are kept where the images are, so every node serves what any node made.
   */
  readVariant(name: string, key: string): Promise<Buffer | undefined>;
  /**
   * Keeps a variant, then drops the least recently used ones past the limits: the image's past its
   * count and bytes, then anyone's past the total. A variant larger than a budget is not kept.
   */
  writeVariant(name: string, key: string, data: Buffer, limits: VariantCacheLimits): Promise<void>;
}

/**
 * What the variant cache keeps (IMAGE_VARIANTS_PER_IMAGE, IMAGE_VARIANT_CACHE_MB_PER_IMAGE,
 * IMAGE_VARIANT_CACHE_MB). Bytes bound the disk or database a stranger's requests can fill; the
 * count alone did not, since one variant of a large image can weigh many times the image.
 */
export interface VariantCacheLimits {
  /** Variants kept per image. */
  readonly perImage: number;
  /** Bytes of one image's variants. */
  readonly bytesPerImage: number;
  /** Bytes of all images' variants together. */
  readonly bytes: number;
}

/** A cached variant and its last use, as a driver lists them for eviction. */
export interface CachedVariant {
  readonly name: string;
  readonly key: string;
  readonly bytes: number;
  /** Last use, ms since the epoch. */
  readonly usedAt: number;
}

/**
 * The variants to drop so that those left, most recently used first, stay within `count` and
 * `bytes`. `kept` (the one just written) counts as the most recent.
 */
export function overBudget(
  variants: readonly CachedVariant[],
  count: number,
  bytes: number,
  kept: { name: string; key: string },
): CachedVariant[] {
  const isKept = (v: CachedVariant) => v.name === kept.name && v.key === kept.key;
  const newestFirst = [...variants].sort((a, b) => Number(isKept(b)) - Number(isKept(a)) || b.usedAt - a.usedAt);
  let total = 0;
  return newestFirst.filter((variant, index) => {
    total += variant.bytes;
    return index >= count || total > bytes;
  });
}
