/**
 * What a page's or blog's stored record must be: the record built from the row's columns the way
 * the services built it before records were stored (select the catalogue's columns, convert the
 * few typed fields in place, add `id`), serialized with JSON.stringify. Written out here on
 * purpose, as an oracle that does not share code with page.record.ts / blog.record.ts.
 */
import assert from 'node:assert/strict';
import { BLOG_FIELDS, type BlogField } from '../src/content/blogs/blog.fields.js';
import { PAGE_FIELDS, type PageField } from '../src/content/pages/page.fields.js';
import type { DbHandle } from '../src/db/schema.js';
import { entityTag } from '../src/http/representation.js';

export type Resource = 'page' | 'blog';

function pageRecord(row: Record<string, unknown>): Record<string, unknown> {
  row.page_crop_aspect = row.page_crop_aspect === 1;
  row.page_crop_aspect_thumbs = row.page_crop_aspect_thumbs === 1;
  row.id = row.page;
  return row;
}

function parsed(text: unknown, fallback: unknown, valid: (value: unknown) => boolean): unknown {
  try {
    const value: unknown = JSON.parse(String(text) || 'null');
    return value !== null && valid(value) ? value : fallback;
  } catch {
    return fallback;
  }
}

function blogRecord(row: Record<string, unknown>): Record<string, unknown> {
  row.info_show = row.info_show === 'N' ? 'N' : 'Y';
  row.info_img_json = parsed(row.info_img_json, null, () => true);
  row.info_more_images = (parsed(row.info_more_images, [], Array.isArray) as unknown[]).filter((p) => typeof p === 'string');
  row.info_blog_comments_on = row.info_blog_comments_on === 1;
  row.id = row.info_id;
  return row;
}

/** Every row of one resource: its column-built JSON, and what it stores, by id. */
export async function storedAndBuilt(
  db: DbHandle,
  resource: Resource,
): Promise<Map<number, { built: string; record_json: string; etag: string }>> {
  const rows =
    resource === 'page'
      ? await db
          .selectFrom('pages')
          .select(Object.keys(PAGE_FIELDS) as PageField[])
          .select(['record_json', 'etag'])
          .orderBy('page')
          .execute()
      : await db
          .selectFrom('blogs')
          .select(Object.keys(BLOG_FIELDS) as BlogField[])
          .select(['record_json', 'etag'])
          .orderBy('info_id')
          .execute();
  const result = new Map<number, { built: string; record_json: string; etag: string }>();
  for (const { record_json, etag, ...columns } of rows as Array<Record<string, unknown> & { record_json: string; etag: string }>) {
    const record = resource === 'page' ? pageRecord(columns) : blogRecord(columns);
    result.set(record.id as number, { built: JSON.stringify(record), record_json, etag });
  }
  return result;
}

/** Every page and blog stores exactly its column-built JSON, and the strong ETag of that text. Returns how many. */
export async function assertEveryRecordStored(db: DbHandle): Promise<number> {
  let count = 0;
  for (const resource of ['page', 'blog'] as const) {
    for (const [id, { built, record_json, etag }] of await storedAndBuilt(db, resource)) {
      assert.equal(record_json, built, `${resource} ${id}: stored JSON is what its columns give`);
      assert.equal(etag, entityTag(built), `${resource} ${id}: stored ETag is the tag of that JSON`);
      count++;
    }
  }
  return count;
}

/** The list envelope as it was built before records were stored: JSON.stringify of the records and meta. */
export async function columnBuiltList(db: DbHandle, resource: Resource, ids: number[], meta: object): Promise<string> {
  const all = await storedAndBuilt(db, resource);
  const records = ids.map((id) => JSON.parse(all.get(id)!.built) as unknown);
  return JSON.stringify({ data: records, meta });
}
