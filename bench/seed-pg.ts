/**
 * The PostgreSQL side of the page bench: a database of its own on the server, migrated, with a
 * website and an API credential made through the account service, and the very pages of a SQLite
 * file seeded by seed.ts, copied column for column (every column both tables have, so columns a
 * later migration adds come along), in one transaction. Dropped afterwards with `drop()`.
 */
import { randomBytes } from 'node:crypto';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { createCredential, createSite } from '../src/accounts/account.service.js';
import { createDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';

export const DEFAULT_PG_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface PgSeeded {
  url: string;
  siteId: number;
  apiId: string;
  apiKey: string;
  seconds: number;
  drop(): Promise<void>;
}

/** Undefined when PostgreSQL answers at `adminUrl`; otherwise why not. */
export async function postgresUnreachable(adminUrl: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message || error.name : String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Set to the PostgreSQL website's own id rather than copied. */
const NOT_COPIED = new Set(['site_id']);

export async function seedPostgres(adminUrl: string, sqliteFile: string): Promise<PgSeeded> {
  const started = performance.now();
  const name = `cms_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const drop = async () => {
    try {
      await admin.query(`drop database if exists ${name} with (force)`);
    } finally {
      await admin.end();
    }
  };
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  try {
    const db = createDatabase(url.href, { poolSize: 2 });
    await migrateToLatest(db);
    const site = await createSite(db.kysely, 'Benchmark site');
    const credential = await createCredential(db.kysely, site.id, 'bench');
    await db.close();
    await copyPages(sqliteFile, url.href, site.id);
    return {
      url: url.href,
      siteId: site.id,
      apiId: credential.apiId,
      apiKey: credential.apiKey,
      seconds: (performance.now() - started) / 1000,
      drop,
    };
  } catch (error) {
    await drop();
    throw error;
  }
}

async function copyPages(sqliteFile: string, url: string, siteId: number): Promise<void> {
  const sqlite = new SQLite(sqliteFile, { readonly: true });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const inSqlite = new Set((sqlite.pragma('table_info(pages)') as Array<{ name: string }>).map((c) => c.name));
    const { rows } = await client.query<{ column_name: string }>(
      `select column_name from information_schema.columns
       where table_schema = current_schema() and table_name = 'pages' and is_generated = 'NEVER' order by ordinal_position`,
    );
    const columns = rows.map((r) => r.column_name).filter((c) => inSqlite.has(c) && !NOT_COPIED.has(c));
    // Every index but the key is built once after the load rather than row by row (the full-text
    // GIN index most of all), as seed.ts does with SQLite's full-text index.
    const indexes = await client.query<{ indexname: string; indexdef: string }>(
      `select indexname, indexdef from pg_indexes where schemaname = current_schema() and tablename = 'pages' and indexname <> 'pages_pkey'`,
    );
    const names = ['site_id', ...columns].map((c) => `"${c}"`).join(', ');
    // A batch travels as one JSON parameter, which PostgreSQL turns back into rows.
    const insert = (batch: Record<string, unknown>[]) =>
      client.query(`insert into pages (${names}) select ${names} from json_populate_recordset(null::pages, $1)`, [JSON.stringify(batch)]);
    await client.query('begin');
    for (const { indexname } of indexes.rows) await client.query(`drop index "${indexname}"`);
    let batch: Record<string, unknown>[] = [];
    const select = sqlite.prepare(`select ${columns.map((c) => `"${c}"`).join(', ')} from pages order by page`);
    for (const row of select.iterate() as IterableIterator<Record<string, unknown>>) {
      row.site_id = siteId;
      batch.push(row);
      if (batch.length === 1000) {
        await insert(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await insert(batch);
    // The website's page count (migration 0010) is kept by triggers deferred to the commit, and
    // PostgreSQL builds no index on a table with such triggers pending: they run now instead.
    await client.query('set constraints all immediate');
    for (const { indexdef } of indexes.rows) await client.query(indexdef);
    // The pages keep their SQLite ids; the sequence goes on after them, as it would have.
    await client.query(`select setval(pg_get_serial_sequence('pages', 'page'), (select max(page) from pages))`);
    await client.query('commit');
    // Vacuumed as well as analyzed: autovacuum visits a freshly loaded table within a minute or so
    // (its insert threshold), which would change the plans halfway through a run. Vacuuming now
    // sets the visibility map at once, so index-only scans read no heap from the first round on.
    await client.query('vacuum analyze pages');
  } finally {
    await client.end();
    sqlite.close();
  }
}
