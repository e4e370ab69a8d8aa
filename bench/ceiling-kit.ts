/**
 * What both ceilings (ceiling.ts, blogs-ceiling.ts) share: the SQLite file and website from the
 * environment, the app's page-size rule, and serving on 127.0.0.1 with the port reported over IPC
 * until the parent says stop or goes away. Kept apart from harness.ts so a ceiling loads nothing
 * it does not use (its RSS is measured).
 */
import type http from 'node:http';
import SQLite from 'better-sqlite3';

/** `DATABASE_FILE` opened as the service opens it for readers (WAL), and `SITE_ID`. */
export function openFromEnv(): { sqlite: SQLite.Database; siteId: number } {
  const file = process.env.DATABASE_FILE;
  const siteId = Number(process.env.SITE_ID);
  if (!file || !Number.isInteger(siteId)) throw new Error('DATABASE_FILE and SITE_ID are required');
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  return { sqlite, siteId };
}

/** The app's rule: 1–999 as sent, anything else 200. */
export function pageSizeOf(raw: string | null): number {
  const n = raw !== null && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  return n >= 1 && n <= 999 ? n : 200;
}

/** Listens on a free loopback port, tells the parent which, and stops with the parent. */
export function serve(server: http.Server): void {
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
}
