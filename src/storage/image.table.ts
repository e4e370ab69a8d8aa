import type { Timestamp } from '../db/time.js';

/**
 * One image of the database storage (IMAGE_STORAGE=database). A row is staged (name and
 * committed_at null, invisible to readers) while its bytes arrive, and committed in the
 * transaction of the record that shows it, so both become visible together.
 */
export interface ImagesTable {
  /** Random key of the staged object; stays the key after the commit. */
  token: string;
  /** Public name (`<32 hex>.<ext>`), null while staged. */
  name: string | null;
  /** MIME type from the name's extension, null while staged. */
  mime: string | null;
  bytes: number;
  created_at: Timestamp;
  committed_at: Timestamp | null;
}

/**
 * The bytes of an image, in chunks of at most IMAGE_CHUNK_BYTES: an upload is written and an image
 * served one chunk at a time, so neither is ever held whole in memory.
 */
export interface ImageChunksTable {
  token: string;
  seq: number;
  data: Buffer;
}

/**
 * Images made on request from a stored one (GET /images/<name>?width=…), keyed by the image's
 * name and the parameters (`variant`); each image keeps a bounded number, least recently used
 * (`used_at`, ISO time with milliseconds) dropped first. Removed with their image.
 */
export interface ImageVariantsTable {
  name: string;
  variant: string;
  data: Buffer;
  bytes: number;
  used_at: string;
}
