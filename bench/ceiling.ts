/**
 * The ceiling: the least a server can do to answer the same requests. node:http, better-sqlite3
 * prepared statements, the same SQL, columns, boolean conversion and envelope as the app; no
 * framework, authentication, validation, ETag or logging. Run as a child process by run.ts:
 * `DATABASE_FILE=… SITE_ID=… node dist/bench/ceiling.js`, reports its port over IPC.
 */
import http from 'node:http';
import SQLite from 'better-sqlite3';
import { PAGE_FIELDS, type PageField } from '../src/content/pages/page.fields.js';

const file = process.env.DATABASE_FILE;
const siteId = Number(process.env.SITE_ID);
if (!file || !Number.isInteger(siteId)) throw new Error('DATABASE_FILE and SITE_ID are required');

const sqlite = new SQLite(file);
sqlite.pragma('journal_mode = WAL');
sqlite.pragma('busy_timeout = 5000');

const fields = Object.keys(PAGE_FIELDS) as PageField[];
const booleans = fields.filter((f) => PAGE_FIELDS[f].kind === 'bool');
// The app's SQL text exactly as Kysely compiles it, `and 1 = 1` (no filters) included.
const columns = fields.map((f) => `"pages"."${f}"`).join(', ');
const byId = sqlite.prepare(`select ${fields.map((f) => `"${f}"`).join(', ')} from "pages" where "site_id" = ? and "page" = ?`);
const list = sqlite.prepare(
  `select ${columns} from "pages" where "pages"."site_id" = ? and 1 = 1 order by "pages"."page_order", "pages"."page" limit ? offset ?`,
);
const count = sqlite.prepare(`select count(*) as "total" from "pages" where "pages"."site_id" = ? and 1 = 1`);

type Row = Record<string, unknown>;

/** The same record shape as toPageRecord: booleans as true/false, `id` last. */
function record(row: Row): Row {
  for (const b of booleans) row[b] = row[b] === 1;
  row.id = row.page;
  return row;
}

function send(res: http.ServerResponse, status: number, body: string) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The app's rule: 1–999 as sent, anything else 200. */
function pageSizeOf(raw: string | null): number {
  const n = raw !== null && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  return n >= 1 && n <= 999 ? n : 200;
}

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path.startsWith('/api/page/')) {
    const row = byId.get(siteId, Number(path.slice('/api/page/'.length))) as Row | undefined;
    if (!row) return send(res, 404, '{"status":404}');
    return send(res, 200, JSON.stringify({ data: [record(row)], meta: { total: 1, offset: 0, pageSize: 200 } }));
  }
  if (path === '/api/page') {
    const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
    const pageSize = pageSizeOf(params.get('pageSize'));
    const offset = Number(params.get('offset') ?? 0) || 0;
    const rows = (list.all(siteId, pageSize, offset) as Row[]).map(record);
    const { total } = count.get(siteId) as { total: number };
    return send(res, 200, JSON.stringify({ data: rows, meta: { total, offset, pageSize } }));
  }
  send(res, 404, '{"status":404}');
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ port: typeof address === 'object' && address ? address.port : 0 });
});
// Stops with its parent: on a message, or when the IPC channel goes away.
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('message', stop);
process.on('disconnect', stop);
