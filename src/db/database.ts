import { createRequire } from 'node:module';
import SQLite from 'better-sqlite3';
import { type Compilable, Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import type PG from 'pg';
import type { Database } from './schema.js';

export type DialectName = 'sqlite' | 'postgres';

export interface Db {
  readonly kysely: Kysely<Database>;
  readonly dialect: DialectName;
  /** PostgreSQL schema the tables live in (`public` unless configured); undefined on SQLite. */
  readonly schema: string | undefined;
  /** The raw better-sqlite3 handle (SQLite only): hot read paths use prepared statements on it. */
  readonly sqlite: SQLite.Database | undefined;
  /**
   * A hot read as a prepared statement, compiled once from `build` (whose values are placeholders;
   * pass the real ones, in the same order, to the statement). SQLite only, and only outside a
   * transaction: there the one connection may hold another request's uncommitted writes, which
   * Kysely's connection lock keeps out of sight. Undefined means: run the Kysely query instead.
   */
  hotStatement(key: string, build: () => Compilable): SQLite.Statement | undefined;
  /** Round trip to the database, for /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** PostgreSQL only: the schema used for every connection (tests isolate themselves this way). */
  readonly schema?: string;
  readonly poolSize?: number;
  /** SQLite commit durability: see Config.sqliteSynchronous. */
  readonly synchronous?: 'full' | 'normal';
}

/** pg (7 MB resident) is loaded only when a PostgreSQL URL is configured. */
function loadPg(): typeof PG {
  const pg = createRequire(import.meta.url)('pg') as typeof PG;
  // COUNT(*) and BIGINT come back as strings; every number this service stores fits in a double.
  pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
  return pg;
}

function openSqlite(file: string, synchronous: 'full' | 'normal'): SQLite.Database {
  const sqlite = new SQLite(file);
  // WAL lets readers run beside the writer; synchronous=FULL fsyncs the WAL on every commit, so a
  // write acknowledged to a client survives a power cut, not only a process crash.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma(`synchronous = ${synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  return sqlite;
}

/**
 * Kysely prepares every query afresh; on better-sqlite3 preparing costs about as much as running a
 * by-id SELECT. Statements are reused by SQL text (queries take their values as parameters, so
 * the set of texts is small; the cache is bounded all the same). Nothing here streams rows, which
 * is the one case where a statement cannot be shared.
 */
function withStatementCache(sqlite: SQLite.Database, limit = 1000) {
  const statements = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sql: string) {
      let statement = statements.get(sql);
      if (!statement) {
        statement = sqlite.prepare(sql);
        if (statements.size >= limit) statements.clear();
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

export function createDatabase(url: string, options: DatabaseOptions = {}): Db {
  if (url.startsWith('sqlite:')) {
    const sqlite = openSqlite(url.slice('sqlite:'.length), options.synchronous ?? 'full');
    const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
    const hot = new Map<string, SQLite.Statement>();
    return {
      hotStatement(key, build) {
        if (sqlite.inTransaction) return undefined;
        let statement = hot.get(key);
        if (!statement) {
          statement = sqlite.prepare(build().compile().sql);
          hot.set(key, statement);
        }
        return statement;
      },
      kysely,
      dialect: 'sqlite',
      schema: undefined,
      sqlite,
      async ping() {
        sqlite.prepare('SELECT 1').get();
      },
      async close() {
        await kysely.destroy();
      },
    };
  }
  const pg = loadPg();
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kysely,
    dialect: 'postgres',
    schema: options.schema ?? 'public',
    sqlite: undefined,
    hotStatement: () => undefined,
    async ping() {
      await pool.query('SELECT 1');
    },
    async close() {
      await kysely.destroy();
    },
  };
}
