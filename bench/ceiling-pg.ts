/**
 * The PostgreSQL ceiling: the least a server can do to answer the page requests from PostgreSQL.
 * node:http and a `pg` pool of the app's size (10), the SQL the app ran before issue 11 exactly as
 * Kysely compiled it for PostgreSQL (the normalized columns; a list is a plain `order by … limit …
 * offset …`), kept as the fixed yardstick, as ceiling.ts is on SQLite; the app now reads stored
 * records and a list window's keys first (docs/architecture.md). Run as named (prepared once per
 * connection) statements, the same boolean
 * conversion and envelope as the app, JSON.stringify; no framework, authentication, validation,
 * ETag or logging. Run as a child process by run.ts:
 * `DATABASE_URL=postgres://… SITE_ID=… node dist/bench/ceiling-pg.js`, reports its port over IPC.
 */
import http from 'node:http';
import pg from 'pg';
import { PAGE_FIELDS, type PageField } from '../src/content/pages/page.fields.js';
import { pageSizeOf, serve } from './ceiling-kit.js';

const url = process.env.DATABASE_URL;
const siteId = Number(process.env.SITE_ID);
if (!url || !Number.isInteger(siteId)) throw new Error('DATABASE_URL and SITE_ID are required');
// As the app does (src/db/database.ts): count(*) is a BIGINT, sent as a number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
const pool = new pg.Pool({ connectionString: url, max: 10 });

const fields = Object.keys(PAGE_FIELDS) as PageField[];
const booleans = fields.filter((f) => PAGE_FIELDS[f].kind === 'bool');
const columns = fields.map((f) => `"pages"."${f}"`).join(', ');
const byIdSql = `select ${fields.map((f) => `"${f}"`).join(', ')} from "pages" where "site_id" = $1 and "page" = $2`;
const listSql = `select ${columns} from "pages" where "pages"."site_id" = $1 and 1 = 1 order by "pages"."page_order", "pages"."page" limit $2 offset $3`;
const countSql = `select count(*) as "total" from "pages" where "pages"."site_id" = $1 and 1 = 1`;

type Row = Record<string, unknown>;

function record(row: Row): Row {
  for (const b of booleans) row[b] = row[b] === 1;
  row.id = row.page;
  return row;
}

function send(res: http.ServerResponse, status: number, body: string) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function answer(req: http.IncomingMessage, res: http.ServerResponse) {
  const raw = req.url ?? '/';
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  if (path.startsWith('/api/page/')) {
    const id = Number(path.slice('/api/page/'.length));
    const { rows } = await pool.query({ name: 'by-id', text: byIdSql, values: [siteId, id] });
    if (!rows[0]) return send(res, 404, '{"status":404}');
    return send(res, 200, JSON.stringify({ data: [record(rows[0])], meta: { total: 1, offset: 0, pageSize: 200 } }));
  }
  if (path === '/api/page') {
    const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
    const pageSize = pageSizeOf(params.get('pageSize'));
    const offset = Number(params.get('offset') ?? 0) || 0;
    // Rows and count on two pooled connections at once, as the app runs them.
    const [list, count] = await Promise.all([
      pool.query({ name: 'list', text: listSql, values: [siteId, pageSize, offset] }),
      pool.query({ name: 'count', text: countSql, values: [siteId] }),
    ]);
    const total = (count.rows[0] as { total: number }).total;
    return send(res, 200, JSON.stringify({ data: list.rows.map(record), meta: { total, offset, pageSize } }));
  }
  send(res, 404, '{"status":404}');
}

const server = http.createServer((req, res) => {
  answer(req, res).catch((error: unknown) => send(res, 500, JSON.stringify({ status: 500, detail: String(error) })));
});
serve(server);
