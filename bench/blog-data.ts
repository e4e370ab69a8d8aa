/**
 * Data for the blog bench: blogs with long HTML bodies straight into SQLite, and noisy JPEGs of a
 * chosen size for the uploads. Seeded PRNG: the same data every run.
 */
import SQLite from 'better-sqlite3';
import sharp from 'sharp';
import { BLOG_FIELDS, type BlogField } from '../src/content/blogs/blog.fields.js';
import { blogSortKeys, storedBlog } from '../src/content/blogs/blog.record.js';
import type { BlogRow } from '../src/content/blogs/blog.table.js';
import { type BlogSearchFields, blogSearchText } from '../src/content/shared/search-text.js';
import { registerFold } from '../src/db/text-fold.js';
import { formatTimestamp } from '../src/db/time.js';
import { prng } from './seed.js';

const WORDS = 'bread starter flour oven crust crumb recipe season market coffee butter honey garden autumn winter village bakery morning'
  .split(' ')
  .concat('team kitchen festival opening hours delivery order fresh local organic rye wheat spelt seeds'.split(' '));

/** Blogs with long HTML bodies (4–14 KB), straight through better-sqlite3 in one transaction. */
export function seedBlogs(file: string, siteId: number, pageId: number, count: number): { averageHtmlBytes: number } {
  const sqlite = new SQLite(file);
  // The trigram index's triggers fold the text they index (migration 0022).
  registerFold(sqlite);
  const random = prng(3);
  const pick = () => WORDS[Math.floor(random() * WORDS.length)]!;
  const words = (n: number) => Array.from({ length: n }, pick).join(' ');
  const paragraph = () =>
    `<p class="lead">${words(12)} <strong>${words(2)}</strong> ${words(25)} <a href="/blog/${pick()}" title="${words(2)}">${words(3)}</a>.</p>`;
  const fields = (Object.keys(BLOG_FIELDS) as BlogField[]).filter((f) => f !== 'info_id');
  const insert = sqlite.prepare(
    `insert into blogs (site_id, search_text, ${fields.join(', ')}) values (@site_id, @search_text, ${fields.map((f) => `@${f}`).join(', ')})`,
  );
  // Each blog's stored record, built as the service builds it once the id is known.
  const store = sqlite.prepare(
    'update blogs set record_json = @record_json, etag = @etag, title_sort_key = @title_sort_key where info_id = @info_id',
  );
  let htmlBytes = 0;
  sqlite.transaction(() => {
    for (let i = 0; i < count; i++) {
      const title = `${words(4)} ${i + 1}`;
      const parts = [`<h2>${words(5)}</h2>`];
      const target = 4000 + random() * 10000;
      let length = 0;
      while (length < target) {
        const p = paragraph();
        parts.push(p);
        length += p.length;
      }
      const html = parts.join('\n');
      htmlBytes += html.length;
      const date = formatTimestamp(new Date(Date.parse('2020-01-01T00:00:00Z') + i * 3_600_000));
      const row: Record<string, string | number> = {
        ...Object.fromEntries(fields.map((f) => [f, BLOG_FIELDS[f].kind === 'text' || BLOG_FIELDS[f].kind === 'timestamp' ? '' : 0])),
        page: pageId,
        info_title: title,
        info_fulltext: html,
        info_summary: words(30),
        info_metatitle: `${title} | Bakery`,
        info_filename: `post-${i + 1}`,
        info_tags: `${pick()}, ${pick()}, ${pick()}`,
        info_show: random() < 0.9 ? 'Y' : 'N',
        info_date: date.slice(0, 10),
        info_timestamp: date,
        info_order: 0,
        info_img: `/images/${(i + 1).toString(16).padStart(32, '0')}.jpg`,
        info_img_json: JSON.stringify({ width: 1200, height: 800, bytes: 180_000 + i, type: 'image/jpeg' }),
        info_more_images: JSON.stringify([`/images/${(i + 1).toString(16).padStart(31, '0')}a.jpg`]),
        info_blog_comments_on: random() < 0.5 ? 1 : 0,
        cid: siteId,
        site_id: siteId,
      };
      row.search_text = blogSearchText(row as unknown as BlogSearchFields);
      const info_id = Number(insert.run(row).lastInsertRowid);
      store.run({ ...storedBlog({ ...row, info_id } as unknown as BlogRow), ...blogSortKeys(row as unknown as BlogRow), info_id });
    }
  })();
  sqlite.pragma('wal_checkpoint(TRUNCATE)');
  sqlite.close();
  return { averageHtmlBytes: Math.round(htmlBytes / count) };
}

/** A JPEG of about `bytes`: noise compresses badly, so its size follows its area. */
export async function noisyJpeg(bytes: number, seed: number): Promise<Buffer> {
  const random = prng(seed);
  let side = Math.ceil(Math.sqrt(bytes / 1.5));
  for (;;) {
    const pixels = Buffer.alloc(side * side * 3);
    for (let i = 0; i < pixels.length; i++) pixels[i] = Math.floor(random() * 256);
    const jpeg = await sharp(pixels, { raw: { width: side, height: side, channels: 3 } })
      .jpeg({ quality: 80 })
      .toBuffer();
    if (jpeg.length >= bytes * 0.9) return jpeg;
    side = Math.ceil(side * Math.sqrt(bytes / jpeg.length));
  }
}
