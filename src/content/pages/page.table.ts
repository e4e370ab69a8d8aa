import type { Generated, Selectable } from 'kysely';
import type { RowOf } from '../shared/fields.js';
import type { PAGE_FIELDS, PageField } from './page.fields.js';

/** A page row: every field of the catalogue, stored as its kind says, plus the tenant, search text and stored record. */
export type PagesTable = Omit<RowOf<typeof PAGE_FIELDS>, 'page'> & {
  page: Generated<number>;
  site_id: number;
  /** Plain text the full-text index is built from (titles, summary, keywords, HTML without tags). */
  search_text: string;
  /** What orderBy=title and orderBy=menutext sort by (page.record.ts, pageSortKeys). */
  title_sort_key: Generated<string>;
  menutext_sort_key: Generated<string>;
  /**
   * The record's JSON text as GET sends it, and its strong ETag: written with every change of the
   * row (page.record.ts), never part of the catalogue, so never part of a record or a schema.
   */
  record_json: Generated<string>;
  etag: Generated<string>;
  /** 1 when record_json holds anything outside ASCII: SQLite reads it as bytes (migration 0025). */
  record_non_ascii: Generated<number>;
};

/** A page's catalogue columns as read: what its record is built from. */
export type PageRow = Pick<Selectable<PagesTable>, PageField>;
