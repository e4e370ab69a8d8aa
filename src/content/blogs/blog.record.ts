/**
 * A blog row as clients see it: the record built from the row's columns, and its stored form.
 * The one place that decides the record's shape, used by the service, the migration that fills
 * the stored column, and the bench seeder.
 */
import { sortKey } from '../shared/search-text.js';
import { storedRecord, type WrittenRecord } from '../shared/stored.js';
import { BLOG_FIELDS, type BlogField } from './blog.fields.js';
import type { ImageMetadata } from './blog.images.js';
import type { BlogRow } from './blog.table.js';

export type BlogRecord = Omit<BlogRow, 'info_show' | 'info_img_json' | 'info_more_images' | 'info_blog_comments_on'> & {
  info_show: 'Y' | 'N';
  info_img_json: ImageMetadata | null;
  info_more_images: string[];
  info_blog_comments_on: boolean;
  id: number;
};

const FIELDS = Object.keys(BLOG_FIELDS) as BlogField[];

function parseMetadata(text: string): ImageMetadata | null {
  if (!text) return null;
  try {
    return JSON.parse(text) as ImageMetadata;
  } catch {
    return null;
  }
}

function parsePaths(text: string): string[] {
  try {
    const value: unknown = JSON.parse(text || '[]');
    return Array.isArray(value) ? value.filter((p): p is string => typeof p === 'string') : [];
  } catch {
    return [];
  }
}

/** The record of a row: the catalogue's fields in its order, then `id`; the row is left as it is. */
export function toBlogRecord(row: BlogRow): BlogRecord {
  const record = {} as Record<string, unknown>;
  for (const field of FIELDS) record[field] = row[field];
  record.info_show = row.info_show === 'N' ? 'N' : 'Y';
  record.info_img_json = parseMetadata(row.info_img_json);
  record.info_more_images = parsePaths(row.info_more_images);
  record.info_blog_comments_on = row.info_blog_comments_on === 1;
  record.id = row.info_id;
  return record as BlogRecord;
}

/** The columns of a record: toBlogRecord undone (a revision, restored). */
export function blogRowOf(record: BlogRecord): BlogRow {
  const row = {} as Record<string, unknown>;
  for (const field of FIELDS) row[field] = record[field];
  row.info_img_json = record.info_img_json ? JSON.stringify(record.info_img_json) : '';
  row.info_more_images = JSON.stringify(record.info_more_images);
  row.info_blog_comments_on = record.info_blog_comments_on ? 1 : 0;
  return row as BlogRow;
}

/** What a blog row stores beside its columns: its record's JSON text and strong ETag. */
export function storedBlog(row: BlogRow): WrittenRecord {
  return storedRecord(toBlogRecord(row));
}

/** The key a blog is listed by in title order (sortKey), written beside its stored record. */
export function blogSortKeys(row: Pick<BlogRow, 'info_title'>): { title_sort_key: string } {
  return { title_sort_key: sortKey(row.info_title) };
}
