import type { Generated, Selectable } from 'kysely';
import type { RowOf } from '../shared/fields.js';
import type { BLOG_FIELDS, BlogField } from './blog.fields.js';

/**
 * A blog row. info_show is 'Y'/'N'; info_img_json is JSON text ('' for none); info_more_images is
 * a JSON array of paths.
 */
export type BlogsTable = Omit<RowOf<typeof BLOG_FIELDS>, 'info_id'> & {
  info_id: Generated<number>;
  site_id: number;
  /** Plain text the full-text index is built from (title, summary, tags, SEO title, HTML without tags). */
  search_text: string;
  /** What orderBy=title sorts by (blog.record.ts, blogSortKeys). */
  title_sort_key: Generated<string>;
  /**
   * The record's JSON text as GET sends it, and its strong ETag: written with every change of the
   * row (blog.record.ts), never part of the catalogue, so never part of a record or a schema.
   */
  record_json: Generated<string>;
  etag: Generated<string>;
  /** 1 when record_json holds anything outside ASCII: SQLite reads it as bytes (migration 0025). */
  record_non_ascii: Generated<number>;
};

/** A blog's catalogue columns as read: what its record is built from. */
export type BlogRow = Pick<Selectable<BlogsTable>, BlogField>;

export type ImageRole = 'primary' | 'additional';

/**
 * The images a blog currently shows that came in as uploads, with what migrateMode needs to
 * recognise an original it has already seen: the client's file name and the content hash.
 */
export interface BlogImagesTable {
  site_id: number;
  info_id: number;
  role: ImageRole;
  /** Public path, /images/<name>. */
  path: string;
  original_name: string;
  /** Hex SHA-256 of the original's bytes (width, height, bytes and type are the stored image's). */
  sha256: string;
  bytes: number;
  width: number;
  height: number;
  /** MIME type, e.g. image/jpeg. */
  type: string;
  /** The thumbnail's size, 0 × 0 when there is none; it is stored under thumbnailNameOf(path). */
  thumb_width: Generated<number>;
  thumb_height: Generated<number>;
  /** The rules the image was made under (rulesKey), '' for an image stored before rules applied. */
  rules: Generated<string>;
}

/** An image row as read. */
export type BlogImageRow = Selectable<BlogImagesTable>;

/**
 * The website that uploaded a stored image (migration 0020), under the image's own name (its
 * thumbnail goes with it). Only that website's records keep the image stored; an image with no
 * row (stored before owners were recorded, and no blog_images row then named it) is kept by any
 * website's record.
 */
export interface ImageOwnersTable {
  name: string;
  site_id: number;
}
