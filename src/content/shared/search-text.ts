/**
 * The plain text each record's full-text index is built from (the `search_text` column): the
 * text fields, and the HTML without its tags and entities, with accents folded as queries are.
 * Written with the record; a migration rebuilds it for every stored record when these rules change
 * (0004, 0011).
 */
import { foldForSearch, htmlToText } from './filters.js';

export interface PageSearchFields {
  page_usertitle: string;
  page_menuname: string;
  page_metatitle: string;
  page_summary: string;
  page_keywords: string;
  page_html_intro: string;
  page_html_content: string;
}

export interface BlogSearchFields {
  info_title: string;
  info_metatitle: string;
  info_summary: string;
  info_tags: string;
  info_fulltext: string;
}

const joined = (parts: readonly string[]) => foldForSearch(parts.filter(Boolean).join('\n'));

export function pageSearchText(p: PageSearchFields): string {
  return joined([
    p.page_usertitle,
    p.page_menuname,
    p.page_metatitle,
    p.page_summary,
    p.page_keywords,
    htmlToText(p.page_html_intro),
    htmlToText(p.page_html_content),
  ]);
}

export function blogSearchText(b: BlogSearchFields): string {
  return joined([b.info_title, b.info_metatitle, b.info_summary, b.info_tags, htmlToText(b.info_fulltext)]);
}

/** Longest sort key, in code points: the key is kept in an index and carried in a list's cursor. */
const SORT_KEY_MAX = 64;

/**
 * The key a title is listed by: lower case and accents folded as the search text is (`Élan` and
 * `elan` sort together), control characters and runs of white space as one space, trimmed, and
 * cut to SORT_KEY_MAX code points. Both databases compare it by code point (a `C` collation on
 * PostgreSQL, binary on SQLite), so the order is the same on both; titles equal in their first
 * SORT_KEY_MAX characters tie, and ties go by id. Written with every record (the stored-record
 * step, stored-records.ts) and by migration 0014 for records stored before.
 */
export function sortKey(text: string): string {
  const folded = foldForSearch(text.toLowerCase())
    .replace(/\p{Surrogate}/gu, '')
    .replace(/[\p{Cc}\s]+/gu, ' ')
    .trim();
  return Array.from(folded).slice(0, SORT_KEY_MAX).join('');
}
