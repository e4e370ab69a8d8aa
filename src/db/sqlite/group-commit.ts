import { type FileHandle, open } from 'node:fs/promises';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
  type TransactionSettings,
} from 'kysely';

/**
 * Group commit for SQLite (SQLITE_SYNCHRONOUS=full). The connection commits without an fsync of
 * its own (synchronous=NORMAL), and whoever must not go on before a commit is on disk waits here
 * for one `fdatasync` of the write-ahead log, run on libuv's thread pool. Commits made while one
 * flush runs share the next: one flush covers any number of them, and the event loop goes on
 * with other requests meanwhile, where SQLite's own FULL mode holds it for an fsync per commit.
 *
 * The bookkeeping is by sequence number: `written` counts statements that wrote (or committed),
 * `synced` the highest count a finished flush covered. A flush covers every write made before it
 * started, since better-sqlite3 hands each commit's log frames to the kernel before it returns.
 *
 * A failed flush means the kernel could not write the log: what it held may be lost, and a later
 * flush could succeed without having written it. The failure is therefore kept: every later wait
 * fails with it, as PostgreSQL stops on a failed fsync, until the process is restarted.
 */
export class GroupCommit {
  written = 0;
  synced = 0;
  /** Flushes run so far (tests and the bench count them). */
  flushes = 0;
  #failure: Error | undefined;
  #running: { covers: number; done: Promise<void> } | undefined;
  #next: Promise<void> | undefined;
  #file: Promise<FileHandle> | undefined;
  readonly #walPath: string;
  readonly #flush: () => Promise<void>;

  /** `flush` syncs the log's data to disk; by default the file at `walPath`, opened once, is fdatasynced. */
  constructor(walPath: string, flush?: () => Promise<void>) {
    this.#walPath = walPath;
    this.#flush = flush ?? (() => this.#datasync());
  }

  /** A statement that writes, or a commit, is about to run. */
  wrote(): void {
    this.written += 1;
  }

  /**
   * Undefined when everything written so far is on disk (the common case, and free); otherwise a
   * promise that settles once it is.
   */
  pending(): Promise<void> | undefined {
    if (this.#failure) return Promise.reject(this.#failure);
    return this.written > this.synced ? this.until(this.written) : undefined;
  }

  /** Settles once the writes up to `seq` are on disk. */
  until(seq: number): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (seq <= this.synced) return Promise.resolve();
    if (this.#running && this.#running.covers >= seq) return this.#running.done;
    // The flush that runs now started before `seq` was written: the next one, shared by all who
    // arrive meanwhile, starts when it ends.
    this.#next ??= (this.#running?.done ?? Promise.resolve()).then(
      () => this.#start(),
      () => this.#start(),
    );
    return this.#next;
  }

  /** Waits for a flush under way, then closes the file (the database is closing). */
  async close(): Promise<void> {
    await this.#next?.catch(() => undefined);
    await this.#running?.done.catch(() => undefined);
    const file = this.#file;
    this.#file = undefined;
    await (await file?.catch(() => undefined))?.close();
  }

  #start(): Promise<void> {
    this.#next = undefined;
    if (this.#failure) return Promise.reject(this.#failure);
    const covers = this.written;
    this.flushes += 1;
    const done = this.#flush().then(
      () => {
        this.synced = Math.max(this.synced, covers);
        this.#running = undefined;
      },
      (error: unknown) => {
        this.#failure = new Error(`The database's write-ahead log could not be synced to disk: ${String(error)}`, { cause: error });
        this.#running = undefined;
        throw this.#failure;
      },
    );
    this.#running = { covers, done };
    return done;
  }

  async #datasync(): Promise<void> {
    this.#file ??= open(this.#walPath, 'r');
    await (await this.#file).datasync();
  }
}

/**
 * Kysely's SQLite driver, except that a transaction that may write starts with BEGIN IMMEDIATE:
 * it takes the database's write lock before its first read, so the reads that decide a write (a
 * count before an insert, a revision before a restore) see the last commit of every process on
 * the file, the CLI's included, and hold until the commit. A plain BEGIN reads a snapshot first
 * and fails with SQLITE_BUSY at its first write when another process committed meanwhile: an
 * error for a check that was right, where the lock waits its turn (busy_timeout). Read-only
 * transactions (inSnapshot) keep BEGIN and take no lock.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection, settings?: TransactionSettings): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(settings?.accessMode === 'read only' ? 'begin' : 'begin immediate'));
  }
}

/** Kysely's SQLite dialect on ImmediateSqliteDriver. */
export class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }
}

/**
 * ImmediateSqliteDriver, except that a query run on its own, or a transaction run by
 * `transaction().execute()`, settles only once everything committed so far is on disk. A COMMIT
 * or a write in autocommit therefore returns once it is durable, as with SQLite's FULL; so does a
 * read, which may have seen another request's commit whose flush is still running. The wait comes
 * after the connection is released, so other queries run meanwhile and their commits share the
 * flush. A controlled transaction (`startTransaction`) releases its connection without awaiting
 * it: whoever commits one awaits the Db's `groupCommit?.pending()` (request-transaction.ts).
 */
class GroupCommitDriver extends ImmediateSqliteDriver {
  readonly #commits: GroupCommit;

  constructor(config: SqliteDialectConfig, commits: GroupCommit) {
    super(config);
    this.#commits = commits;
  }

  override async releaseConnection(): Promise<void> {
    const written = this.#commits.written;
    await super.releaseConnection();
    if (written > this.#commits.synced) await this.#commits.until(written);
  }
}

/** Kysely's SQLite dialect on GroupCommitDriver. */
export class GroupCommitDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  readonly #commits: GroupCommit;

  constructor(config: SqliteDialectConfig, commits: GroupCommit) {
    super(config);
    this.#config = config;
    this.#commits = commits;
  }

  override createDriver(): Driver {
    return new GroupCommitDriver(this.#config, this.#commits);
  }
}
