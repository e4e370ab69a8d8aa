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
