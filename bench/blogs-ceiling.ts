/**
 * The blog list ceiling: node:http and a better-sqlite3 prepared statement running the app's blog
 * list SQL, the same record conversion (info_show as is, info_img_json and info_more_images parsed,
 * the boolean, `id` last) and envelope; no framework, authentication, validation or ETag.
 * `DATABASE_FILE=… SITE_ID=… node dist/bench/blogs-ceiling.js`, reports its port over IPC.
 */
import http from 'node:http';
import SQLite from 'better-sqlite3';
import { BLOG_FIELDS, type BlogField } from '../src/content/blogs/blog.fields.js';

const file = process.env.DATABASE_FILE;
const siteId = Number(process.env.SITE_ID);
if (!file || !Number.isInteger(siteId)) throw new Error('DATABASE_FILE and SITE_ID are required');

const sqlite = new SQLite(file);
sqlite.pragma('journal_mode = WAL');
sqlite.pragma('busy_timeout = 5000');

const fields = Object.keys(BLOG_FIELDS) as BlogField[];
// The app's SQL text as Kysely compiles listBlogs without filters (`and 1 = 1` included).
const list = sqlite.prepare(
  `select ${fields.map((f) => `"blogs"."${f}"`).join(', ')} from "blogs" where "blogs"."site_id" = ? and 1 = 1 order by "blogs"."info_order", "blogs"."info_date" desc, "blogs"."info_id" limit ? offset ?`,
);
const count = sqlite.prepare(`select count(*) as "total" from "blogs" where "blogs"."site_id" = ? and 1 = 1`);

type Row = Record<string, unknown>;

function record(row: Row): Row {
  row.info_img_json = row.info_img_json ? JSON.parse(row.info_img_json as string) : null;
  row.info_more_images = JSON.parse((row.info_more_images as string) || '[]');
  row.info_blog_comments_on = row.info_blog_comments_on === 1;
  row.id = row.info_id;
  return row;
}

function pageSizeOf(raw: string | null): number {
  const n = raw !== null && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  return n >= 1 && n <= 999 ? n : 200;
}

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  if ((q < 0 ? url : url.slice(0, q)) !== '/api/blog') {
    res.writeHead(404).end();
    return;
  }
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const pageSize = pageSizeOf(params.get('pageSize'));
  const offset = Number(params.get('offset') ?? 0) || 0;
  const rows = (list.all(siteId, pageSize, offset) as Row[]).map(record);
  const { total } = count.get(siteId) as { total: number };
  const body = JSON.stringify({ data: rows, meta: { total, offset, pageSize } });
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ port: typeof address === 'object' && address ? address.port : 0 });
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('message', stop);
process.on('disconnect', stop);
