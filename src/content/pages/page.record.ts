/**
 * A page row as clients see it: the record built from the row's columns, and its stored form.
 * The one place that decides the record's shape, used by the service, the migration that fills
 * the stored column, and the bench seeder.
 */
import { sortKey } from '../shared/search-text.js';
import { storedRecord, type WrittenRecord } from '../shared/stored.js';
import { PAGE_FIELDS, type PageField } from './page.fields.js';
import type { PageRow } from './page.table.js';

export type PageRecord = Omit<PageRow, 'page_crop_aspect' | 'page_crop_aspect_thumbs'> & {
  page_crop_aspect: boolean;
  page_crop_aspect_thumbs: boolean;
  id: number;
};

const FIELDS = Object.keys(PAGE_FIELDS) as PageField[];

/** The record of a row: the catalogue's fields in its order, then `id`; the row is left as it is. */
export function toPageRecord(row: PageRow): PageRecord {
  const record = {} as Record<string, unknown>;
  for (const field of FIELDS) record[field] = row[field];
  record.page_crop_aspect = row.page_crop_aspect === 1;
  record.page_crop_aspect_thumbs = row.page_crop_aspect_thumbs === 1;
  record.id = row.page;
  return record as PageRecord;
}

/** The columns of a record: toPageRecord undone (a revision, restored). */
export function pageRowOf(record: PageRecord): PageRow {
  const row = {} as Record<string, unknown>;
  for (const field of FIELDS) row[field] = record[field];
  row.page_crop_aspect = record.page_crop_aspect ? 1 : 0;
  row.page_crop_aspect_thumbs = record.page_crop_aspect_thumbs ? 1 : 0;
  return row as PageRow;
}

/** What a page row stores beside its columns: its record's JSON text and strong ETag. */
export function storedPage(row: PageRow): WrittenRecord {
  return storedRecord(toPageRecord(row));
}

/** The keys a page is listed by in title and menu-text order (sortKey), written beside its stored record. */
export function pageSortKeys(row: Pick<PageRow, 'page_usertitle' | 'page_menuname'>): {
  title_sort_key: string;
  menutext_sort_key: string;
} {
  return { title_sort_key: sortKey(row.page_usertitle), menutext_sort_key: sortKey(row.page_menuname) };
}
