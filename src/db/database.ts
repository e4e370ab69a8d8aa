import { createRequire } from 'node:module';
import SQLite from 'better-sqlite3';
import {
  type Compilable,
  type Driver,
  Kysely,
  type KyselyConfig,
  PostgresAdapter,
  PostgresDialect,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from 'kysely';
import type PG from 'pg';
import { DEFAULT_SQLITE_MMAP_MB } from '../config.js';
import type { MaybePromise } from '../maybe-async.js';
import { makePrivate } from '../private-files.js';
import { CredentialKeep, connectionWatch, postgresRemoteChanges, registerKeep, sqliteRemoteChanges } from './credential-keep.js';
import type { Database, DbHandle } from './schema.js';
import { TurnSnapshot } from './turn-snapshot.js';
import { WalSync } from './wal-sync.js';

export type DialectName = 'sqlite' | 'postgres';

/**
 * An opened database: what the process starts, migrates, checks and closes. Everything that
 * reads or writes takes its `kysely` handle (DbHandle) instead.
 */
export interface Db {
  readonly kysely: DbHandle;
  readonly dialect: DialectName;
  /** PostgreSQL schema the tables live in (`public` unless configured); undefined on SQLite. */
  readonly schema: string | undefined;
  /** Round trip to the database, for /readyz; on SQLite it also fails once a flush of the log has failed. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** PostgreSQL only: the schema used for every connection (tests isolate themselves this way). */
  readonly schema?: string;
  readonly poolSize?: number;
  /** SQLite commit durability: see Config.sqliteSynchronous. */
  readonly synchronous?: 'full' | 'normal';
  /** SQLite's memory-mapped reads, in MB (0: off): see Config.sqliteMmapMB. DEFAULT_SQLITE_MMAP_MB when absent. */
  readonly mmapMB?: number;
  /** PostgreSQL only: told when a pooled connection fails (the server closed it, or it broke): the pool drops it. */
  readonly onConnectionLost?: (error: Error) => void;
  /** Keep credentials and access tokens per process until the database says one changed (credential-keep.ts); true when absent. */
  readonly keepCredentials?: boolean;
  /** PostgreSQL only: told when the connection that listens for credential changes is lost (it is opened again). */
  readonly onChangesUnheard?: (error: Error) => void;
  /** Kysely's query log, BEGIN and COMMIT included (tests count transactions with it). */
  readonly log?: KyselyConfig['log'];
}

/** The dialect behind a handle (a transaction's handle shares its database's adapter). */
export function dialectOf(db: DbHandle): DialectName {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/** pg (7 MB resident) is loaded only when a PostgreSQL URL is configured. */
function loadPg(): typeof PG {
  const pg = createRequire(import.meta.url)('pg') as typeof PG;
  // COUNT(*) and BIGINT come back as strings; every number this service stores fits in a double.
  pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
  return pg;
}

function openSqlite(file: string, mmapMB: number): SQLite.Database {
  const sqlite = new SQLite(file);
  // Only the service's user may read the data. SQLite gives the -wal and -shm files it creates the
  // database file's mode, so setting it before WAL mode is on covers them; ones left by an earlier
  // run are set too. chmod rather than a process-wide umask: it also tightens a database an older
  // version created world-readable, and it holds for the CLI as for the server.
  if (file !== ':memory:' && file !== '') makePrivate([file, `${file}-wal`, `${file}-shm`]);
  // WAL lets readers run beside the writer. The connection itself never fsyncs at commit
  // (NORMAL): with SQLITE_SYNCHRONOUS=full, what is committed is put on disk by WalSync's shared
  // fdatasync before anyone goes on (GroupCommitDriver below), so a write acknowledged to a client
  // survives a power cut, not only a process crash, as SQLite's FULL would make it.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // Reads by memory map: a page comes from the OS page cache without a read() per page, which was
  // most of a list's time on a database larger than SQLite's own 16 MB cache (bench/README.md).
  sqlite.pragma(`mmap_size = ${mmapMB * 1024 * 1024}`);
  return sqlite;
}

/**
 * Kysely prepares every query afresh; on better-sqlite3 preparing costs about as much as running a
 * by-id SELECT. Statements are reused by SQL text (queries take their values as parameters, so
 * the set of texts is small; the cache is bounded all the same). Nothing here streams rows, which
 * is the one case where a statement cannot be shared.
 */
function withStatementCache(sqlite: SQLite.Database, keep: CredentialKeep, wal: WalSync | undefined, snapshot: TurnSnapshot, limit = 1000) {
  const statements = new Map<string, SQLite.Statement>();
  const watch = connectionWatch(keep);
  /** False only when no statement has gone out since SQLite last said no transaction was open. */
  let mayBeOpen = true;
  /**
   * Whether a transaction is open on the connection. Only a statement run through `prepare`
   * (every one Kysely runs) can open one, so SQLite is asked (a call into its native code, a
   * measurable part of a GET by id under load) only when one has gone out since it last said no.
   */
  const inTransaction = (): boolean => {
    if (mayBeOpen) mayBeOpen = sqlite.inTransaction;
    return mayBeOpen;
  };
  return {
    close: () => {
      snapshot.end();
      sqlite.close();
    },
    inTransaction,
    prepare(sql: string) {
      // Kysely's statements run on their own, never inside the hot reads' snapshot (turn-snapshot.ts).
      snapshot.end();
      // Whether a transaction is open before this statement runs; it may open one.
      const open = inTransaction();
      mayBeOpen = true;
      let statement = statements.get(sql);
      if (!statement) {
        statement = sqlite.prepare(sql);
        if (statements.size >= limit) statements.clear();
        statements.set(sql, statement);
      }
      // The keep sees each statement as it goes out (credential-keep.ts). better-sqlite3 runs it
      // right after this returns, before any other request's code, so what comes after it can be
      // said now. Reads (most statements) only cost the test of their first word.
      if (watch.before(sql, open)) watch.after();
      // Kysely's COMMIT is this text; BEGIN and COMMIT count as read-only to SQLite.
      if (wal && (!statement.readonly || sql === 'commit')) wal.wrote();
      return statement;
    },
  };
}

/** By the database's adapter, which every handle on it shares (its transactions, other schemas). */
const walSyncs = new WeakMap<object, WalSync>();

/** The group commit of a SQLite database with SQLITE_SYNCHRONOUS=full (wal-sync.ts); undefined otherwise. */
export function walSyncOf(db: DbHandle): WalSync | undefined {
  return walSyncs.get(db.getExecutor().adapter);
}

/**
 * Kysely's SQLite driver, except that a query run on its own, or a transaction run by
 * `transaction().execute()`, settles only once everything committed so far is on disk (WalSync).
 * A COMMIT or a write in autocommit therefore returns once it is durable, as with SQLite's FULL;
 * so does a read, which may have seen another request's commit whose flush is still running. The
 * wait comes after the connection is released, so other queries run meanwhile and their commits
 * share the flush. A controlled transaction (`startTransaction`) releases its connection without
 * awaiting it: whoever commits one awaits `walSyncOf(db)?.pending()` (request-transaction.ts).
 */
class GroupCommitDriver extends SqliteDriver {
  readonly #wal: WalSync;

  constructor(config: SqliteDialectConfig, wal: WalSync) {
    super(config);
    this.#wal = wal;
  }

  override async releaseConnection(): Promise<void> {
    const written = this.#wal.written;
    await super.releaseConnection();
    if (written > this.#wal.synced) await this.#wal.until(written);
  }
}

/** Kysely's SQLite dialect on GroupCommitDriver. */
class GroupCommitDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  readonly #wal: WalSync;

  constructor(config: SqliteDialectConfig, wal: WalSync) {
    super(config);
    this.#config = config;
    this.#wal = wal;
  }

  override createDriver(): Driver {
    return new GroupCommitDriver(this.#config, this.#wal);
  }
}

/**
 * A pool whose connections tell the keep of each write to a watched table, and of the end of the
 * transaction that made it (credential-keep.ts). Kysely uses `connect`, `query` and `release`.
 *
 * Every connection listens for its own 'error' for as long as it lives. pg-pool listens only
 * while a connection is idle; one checked out (a transaction between two statements, say) whose
 * server goes away would emit an 'error' nobody hears, and that ends the process. A connection
 * that failed is destroyed when released, never handed out again; the query in flight on it
 * fails with the connection's error, which the problem handler answers as a 503.
 */
function watchedPool(pool: PG.Pool, keep: CredentialKeep, onLost: (error: Error) => void) {
  const clients = new WeakMap<PG.PoolClient, PG.PoolClient>();
  const watching = (client: PG.PoolClient): PG.PoolClient => {
    const watch = connectionWatch(keep);
    let broken: Error | undefined;
    client.on('error', (error) => {
      if (broken) return;
      broken = error;
      onLost(error);
    });
    const query = (...args: unknown[]) => {
      const first = args[0] as string | { text?: string } | undefined;
      const ends = watch.before(typeof first === 'string' ? first : (first?.text ?? ''));
      // A cursor (Kysely's stream) comes back as it is, not as a promise.
      const result = (client.query as (...a: unknown[]) => unknown)(...args);
      if (!ends) return result;
      if (result instanceof Promise) return result.finally(() => watch.after());
      watch.after();
      return result;
    };
    const release = (error?: Error | boolean) => {
      watch.released();
      client.release(error || broken);
    };
    return { query, release } as unknown as PG.PoolClient;
  };
  return {
    async connect() {
      const client = await pool.connect();
      let watched = clients.get(client);
      if (!watched) {
        watched = watching(client);
        clients.set(client, watched);
      }
      return watched;
    },
    end: () => pool.end(),
  };
}

/** A query that hotRead can prepare (compile) or run through Kysely (executeTakeFirst). */
export interface HotQuery<R> extends Compilable {
  executeTakeFirst(): Promise<R | undefined>;
}

/** Where each parameter of a prepared hot read comes from: an argument by name, or a constant of the query. */
type Binding = { readonly arg: string } | { readonly value: unknown };

interface Prepared {
  readonly run: (values: unknown[]) => unknown;
  readonly bindings: readonly Binding[];
}

/** A hot read's query builder, as prepare sees it: arguments in, a compilable query out. */
type Build = (db: DbHandle, args: Record<string, string>) => Compilable;

/** How one database runs its hot reads: a statement prepared once per SQL text, and when not to use it. */
interface HotReads {
  /** A hot read must go through Kysely now (SQLite inside a transaction, see hotRead). */
  readonly busy: () => boolean;
  /** Prepares `sql` once; the function returned runs it with the values and gives its first row. */
  readonly prepare: (sql: string) => (values: unknown[]) => unknown;
  readonly prepared: Map<unknown, Prepared>;
}

const hotReads = new WeakMap<DbHandle, HotReads>();
const MARK = '\u0000hot-arg:';

/**
 * Prepares `build` once: it is called with a marker in place of each argument, and each compiled
 * parameter is bound to the argument whose marker it holds, or kept as the query's own constant.
 * `build` must therefore pass its arguments into the query unchanged (every one is checked).
 */
function prepare(hot: HotReads, db: DbHandle, build: Build, args: Record<string, unknown>): Prepared {
  const markers = Object.fromEntries(Object.keys(args).map((name) => [name, `${MARK}${name}`]));
  const compiled = build(db, markers).compile();
  const bindings: Binding[] = compiled.parameters.map((p) =>
    typeof p === 'string' && p.startsWith(MARK) ? { arg: p.slice(MARK.length) } : { value: p },
  );
  for (const name of Object.keys(args)) {
    if (!bindings.some((b) => 'arg' in b && b.arg === name)) throw new Error(`hot read: argument "${name}" does not reach the query`);
  }
  return { run: hot.prepare(compiled.sql), bindings };
}

/**
 * One row of a hot read (a by-id lookup that runs on every request), from a statement prepared
 * once from `build`, with the arguments bound by name:
 * - on SQLite, a better-sqlite3 statement. Inside a transaction the statement would bypass
 *   Kysely's connection lock and could see another request's uncommitted writes on the one
 *   connection, so there `build` runs as an ordinary Kysely query;
 * - on PostgreSQL, a named statement on the pool's connections: each connection parses and plans
 *   it once instead of on every run. Hot reads name their columns, so a migration that
 *   adds a column does not change what a prepared statement returns.
 * A handle that is a transaction is not in the map: its reads run through Kysely, in it.
 * On SQLite the row comes at once, without a promise, unless a commit is still being made durable
 * (group commit): a GET by id then needs no promise from its credential to its answer.
 */
export function hotRead<A extends Record<string, string | number>, R>(
  db: DbHandle,
  build: (db: DbHandle, args: A) => HotQuery<R>,
  args: A,
): MaybePromise<R | undefined> {
  const hot = hotReads.get(db);
  if (!hot || hot.busy()) return build(db, args).executeTakeFirst();
  let prepared = hot.prepared.get(build);
  if (!prepared) {
    prepared = prepare(hot, db, build as unknown as Build, args);
    hot.prepared.set(build, prepared);
  }
  return prepared.run(prepared.bindings.map((b) => ('arg' in b ? args[b.arg] : b.value))) as MaybePromise<R | undefined>;
}

/** How long a PostgreSQL connection may take to open, or to be had from a full pool. */
const CONNECT_TIMEOUT_MS = 5000;

/** Names of the PostgreSQL hot-read statements: unique in the process, so never two texts under one name on a connection. */
let pgStatements = 0;

export function createDatabase(url: string, options: DatabaseOptions = {}): Db {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length);
    const sqlite = openSqlite(file, options.mmapMB ?? DEFAULT_SQLITE_MMAP_MB);
    const wal = options.synchronous === 'normal' || !sqlite.name || sqlite.memory ? undefined : new WalSync(`${file}-wal`);
    const snapshot = new TurnSnapshot(sqlite);
    let statements: ReturnType<typeof withStatementCache> | undefined;
    /** A hot read must go through Kysely: a transaction of Kysely's is open on the connection (or nothing is set up yet). */
    const busy = () => !snapshot.open && (statements?.inTransaction() ?? true);
    const dataVersion = sqlite.prepare('pragma data_version').pluck();
    // Asked once a turn, inside the turn's snapshot when it can be: the read after it shares its locks.
    const keep = new CredentialKeep((changed) =>
      sqliteRemoteChanges(() => {
        if (!busy()) snapshot.enter();
        return dataVersion.get() as number;
      }, changed),
    );
    statements = withStatementCache(sqlite, keep, wal, snapshot);
    const config = { database: statements };
    const kysely = new Kysely<Database>({
      dialect: wal ? new GroupCommitDialect(config, wal) : new SqliteDialect(config),
      ...(options.log ? { log: options.log } : {}),
    });
    if (wal) walSyncs.set(kysely.getExecutor().adapter, wal);
    hotReads.set(kysely, {
      busy,
      prepare(sql) {
        const statement = sqlite.prepare(sql);
        return (values) => {
          snapshot.enter();
          const row: unknown = statement.get(...values);
          const durable = wal?.pending();
          return durable ? durable.then(() => row) : row;
        };
      },
      prepared: new Map(),
    });
    if (options.keepCredentials !== false) registerKeep(kysely, keep);
    return {
      kysely,
      dialect: 'sqlite',
      schema: undefined,
      async ping() {
        sqlite.prepare('SELECT 1').get();
        // After a failed flush of the log every request fails (WalSync): the node is not ready.
        await wal?.pending();
      },
      async close() {
        await kysely.destroy();
        await wal?.close();
      },
    };
  }
  const pg = loadPg();
  const connection = { connectionString: url, ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}) };
  // A database host that does not answer at all (a failover moving its address, a partition)
  // would otherwise hold a request for the operating system's TCP timeout, minutes: a connection
  // must be made within CONNECT_TIMEOUT_MS (the request then answers 503), and an idle one whose
  // peer vanished is found by TCP keep-alive.
  const pool = new pg.Pool({
    ...connection,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  const keep = new CredentialKeep((changed) =>
    postgresRemoteChanges(pg, connection, (error) => options.onChangesUnheard?.(error), changed),
  );
  // A restart, failover or pg_terminate_backend ends the idle connections too, and pg reports that
  // as an 'error' event of the pool: without a listener it is an uncaught exception, and every node
  // on the database would exit at once. The pool has dropped the connection and opens a new one
  // for the next query, so there is nothing more to do than say so. Checked-out connections are
  // covered by watchedPool.
  const lost = (error: Error) => options.onConnectionLost?.(error);
  pool.on('error', lost);
  const kysely = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: watchedPool(pool, keep, lost) as unknown as PG.Pool }),
    ...(options.log ? { log: options.log } : {}),
  });
  if (options.keepCredentials !== false) registerKeep(kysely, keep);
  hotReads.set(kysely, {
    busy: () => false,
    prepare(text) {
      const name = `hot_${++pgStatements}`;
      return async (values) => (await pool.query({ name, text, values })).rows[0];
    },
    prepared: new Map(),
  });
  return {
    kysely,
    dialect: 'postgres',
    schema: options.schema ?? 'public',
    async ping() {
      await pool.query('SELECT 1');
    },
    async close() {
      await keep.close();
      await kysely.destroy();
    },
  };
}
