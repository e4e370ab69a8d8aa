/**
 * A benchmark database: one website with an API credential and N pages of realistic size (1–3 KB
 * of HTML each, a tree of parents), loaded in one transaction straight through better-sqlite3 so
 * 20,000 pages take seconds. Content is generated from a seeded PRNG: every run gets the same data.
 */
import SQLite from 'better-sqlite3';
import { createCredential, createSite } from '../src/accounts/account.service.js';
import { PAGE_FIELDS, type PageField } from '../src/content/pages/page.fields.js';
import { pageSortKeys, storedPage } from '../src/content/pages/page.record.js';
import type { PageRow } from '../src/content/pages/page.table.js';
import { type PageSearchFields, pageSearchText } from '../src/content/shared/search-text.js';
import { nonAscii } from '../src/content/shared/stored.js';
import { createDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { registerFold } from '../src/db/text-fold.js';
import { formatTimestamp } from '../src/db/time.js';

export interface Seeded {
  siteId: number;
  apiId: string;
  apiKey: string;
  /** Page ids are contiguous on a fresh database: firstId … lastId. */
  firstId: number;
  lastId: number;
  averageHtmlBytes: number;
}

/** mulberry32: small, fast and reproducible. */
export function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The words the seeded text is made of (ASCII): a title is 2 to 5 of them. */
export const WORDS = `content website page service customer product design quality team support delivery local
  garden kitchen summer winter price offer booking contact opening hours family history menu event
  gallery news update project client order return policy shipping simple modern classic natural fresh
  handmade studio workshop course lesson booking friendly award experience welcome village city coast
  mountain river market season recipe coffee bakery bicycle repair rental cottage holiday guide`
  .split(/\s+/)
  .filter(Boolean);

/**
 * The same words as a website in French or German writes them, with typographic quotes: text with
 * characters outside ASCII, which V8 holds as two bytes a character and which the stored-text
 * path reads as bytes (`--text=non-ascii`).
 */
const NON_ASCII_WORDS = WORDS.map((word, i) => (i % 3 === 0 ? `${word}é` : i % 3 === 1 ? `“${word}”` : word.replace('a', 'ä')));

/** What the seeded pages' text is made of: ASCII words (the default), or words with accents and curly quotes. */
export type SeedText = 'ascii' | 'non-ascii';

export async function seedDatabase(file: string, pages: number, text: SeedText = 'ascii'): Promise<Seeded> {
  const vocabulary = text === 'ascii' ? WORDS : NON_ASCII_WORDS;
  const db = createDatabase(`sqlite:${file}`);
  await migrateToLatest(db);
  const site = await createSite(db.kysely, 'Benchmark site');
  const credential = await createCredential(db.kysely, site.id, 'bench');
  await db.close();
  // The pages go in straight through better-sqlite3, in one transaction.
  const sqlite = new SQLite(file);
  // The trigram index's triggers fold the text they index (migration 0022).
  registerFold(sqlite);

  const random = prng(20_000);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const words = (n: number) => Array.from({ length: n }, () => pick(vocabulary)).join(' ');
  const title = () => {
    const t = words(2 + Math.floor(random() * 4));
    return t[0]!.toUpperCase() + t.slice(1);
  };
  const paragraph = () =>
    `<p>${words(10)} <strong>${words(2)}</strong> ${words(8 + Math.floor(random() * 20))}. <a href="/${pick(WORDS)}">${words(2)}</a> ${words(6)}.</p>`;
  const html = () => {
    const parts = [`<h2>${title()}</h2>`];
    const paragraphs = 2 + Math.floor(random() * 7);
    for (let i = 0; i < paragraphs; i++) parts.push(paragraph());
    if (random() < 0.5) parts.push(`<ul>${Array.from({ length: 3 }, () => `<li>${words(4)}</li>`).join('')}</ul>`);
    return parts.join('\n');
  };

  const columns = (Object.keys(PAGE_FIELDS) as PageField[]).filter((f) => f !== 'page');
  const insert = sqlite.prepare(
    `insert into pages (site_id, search_text, ${columns.join(', ')}) values (@site_id, @search_text, ${columns.map((c) => `@${c}`).join(', ')})`,
  );
  // Each page's stored record, built as the service builds it once the id is known.
  const store = sqlite.prepare(
    'update pages set record_json = @record_json, etag = @etag, record_non_ascii = @record_non_ascii, title_sort_key = @title_sort_key, menutext_sort_key = @menutext_sort_key where page = @page',
  );
  const blank = Object.fromEntries(columns.map((c) => [c, PAGE_FIELDS[c].kind === 'text' || PAGE_FIELDS[c].kind === 'timestamp' ? '' : 0]));
  const ids: number[] = [];
  const siblings = new Map<number, number>();
  let htmlBytes = 0;
  const start = Date.parse('2024-01-01T00:00:00Z');

  // Indexing each page's text as it is inserted is most of the load's time (13 s of 20,000 pages'
  // 14 s on a busy machine); rebuilding the full-text index once at the end takes about 1 s and
  // gives the same index. So the insert trigger is set aside for the load and put back after.
  const ftsTrigger = sqlite.prepare(`select sql from sqlite_master where type = 'trigger' and name = 'pages_fts_insert'`).get() as
    | { sql: string }
    | undefined;
  sqlite.transaction(() => {
    if (ftsTrigger) sqlite.exec('drop trigger pages_fts_insert');
    for (let i = 0; i < pages; i++) {
      // The first pages are the top menu; later ones hang below earlier ones, more often below
      // early (higher) pages, which gives a broad, moderately deep tree.
      const parent = i < 20 ? 0 : ids[Math.floor(random() ** 2 * ids.length)]!;
      const order = siblings.get(parent) ?? 0;
      siblings.set(parent, order + 1);
      const heading = title();
      const content = html();
      const intro = `<p>${words(15 + Math.floor(random() * 20))}</p>`;
      htmlBytes += content.length + intro.length;
      const at = formatTimestamp(new Date(start + i * 60_000));
      const row: Record<string, string | number> = {
        ...blank,
        page_usertitle: heading,
        page_menuname: heading.split(' ').slice(0, 2).join(' '),
        page_alias: `${heading.toLowerCase().replace(/\s+/g, '-')}-${i + 1}`,
        page_parent: parent,
        page_order: order,
        page_html_content: content,
        page_html_intro: intro,
        page_summary: words(20),
        page_metatitle: `${heading} | Benchmark site`,
        page_keywords: Array.from({ length: 3 }, () => pick(WORDS)).join(', '),
        page_dt_begin: at,
        page_lastmodified: at,
        wgt_id: Math.floor(random() * 5),
        page_privacy: random() < 0.05 ? 1 : 0,
        page_windowsize: 10,
        page_crop_width: 1200,
        page_crop_height: 800,
        page_crop_aspect: random() < 0.5 ? 1 : 0,
        page_crop_aspect_thumbs: random() < 0.5 ? 1 : 0,
        page_thumb_dimensions: '300x200',
        site_id: site.id,
      };
      row.search_text = pageSearchText(row as unknown as PageSearchFields);
      const page = Number(insert.run(row).lastInsertRowid);
      ids.push(page);
      const stored = storedPage({ ...row, page } as unknown as PageRow);
      store.run({ ...stored, record_non_ascii: nonAscii(stored.record_json), ...pageSortKeys(row as unknown as PageRow), page });
    }
    if (ftsTrigger) {
      sqlite.exec(`insert into pages_fts(pages_fts) values ('rebuild')`);
      sqlite.exec(ftsTrigger.sql);
    }
  })();
  sqlite.pragma('wal_checkpoint(TRUNCATE)');
  sqlite.close();
  return {
    siteId: site.id,
    apiId: credential.apiId,
    apiKey: credential.apiKey,
    firstId: ids[0]!,
    lastId: ids[ids.length - 1]!,
    averageHtmlBytes: Math.round(htmlBytes / pages),
  };
}
