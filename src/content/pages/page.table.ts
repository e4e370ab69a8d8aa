import type { Generated } from 'kysely';
import type { RowOf } from '../shared/fields.js';
import type { PAGE_FIELDS } from './page.fields.js';

/** A page row: every field of the catalogue, stored as its kind says, plus the tenant and search text. */
export type PagesTable = Omit<RowOf<typeof PAGE_FIELDS>, 'page'> & {
  page: Generated<number>;
  site_id: number;
  /** Plain text the full-text index is built from (titles, summary, keywords, HTML without tags). */
  search_text: string;
};
