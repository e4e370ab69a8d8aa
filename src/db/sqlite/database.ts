import SQLite from 'better-sqlite3';
import { makePrivate } from '../../private-files.js';
import { ChangeSource, type RemoteChanges } from '../change-source.js';
import type { DatabaseOptions, Db } from '../db.js';
import { PreparedLookups, RootHandle } from '../prepared-lookup.js';
import { registerFold } from '../text-fold.js';
import { GroupCommit, GroupCommitDialect, ImmediateSqliteDialect } from './group-commit.js';
import { statementCache } from './statement-cache.js';

function openFile(file: string, mmapMB: number): SQLite.Database {
  const sqlite = new SQLite(file);
  // Only the service's user may read the data. SQLite gives the -wal and -shm files it creates the
  // database file's mode, so setting it before WAL mode is on covers them; ones left by an earlier
  // run are set too. chmod rather than a process-wide umask: it also tightens a database an older
  // version created world-readable, and it holds for the CLI as for the server.
  if (file !== ':memory:' && file !== '') makePrivate([file, `${file}-wal`, `${file}-shm`]);
  // WAL lets readers run beside the writer. The connection itself never fsyncs at commit
  // (NORMAL): with SQLITE_SYNCHRONOUS=full, what is committed is put on disk by the group
  // commit's shared fdatasync before anyone goes on, so a write acknowledged to a client survives
  // a power cut, not only a process crash, as SQLite's FULL would make it.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // Reads by memory map: a page comes from the OS page cache without a read() per page, which
  // matters once the database is larger than SQLite's own cache (bench/README.md).
  sqlite.pragma(`mmap_size = ${mmapMB * 1024 * 1024}`);
  // The text filters' folding (text-fold.ts).
  registerFold(sqlite);
  return sqlite;
}

/**
 * A SQLite database: one better-sqlite3 connection, and the parts around it:
 * - the group commit (SQLITE_SYNCHRONOUS=full on a file), which makes commits durable;
 * - the per-tick read transaction, which the prepared lookups of one tick share;
 * - the prepared lookups themselves, run on the connection directly;
 * - the change source, fed by the statements that go out and by `pragma data_version`.
 */
export function openSqliteDatabase(file: string, options: DatabaseOptions & { readonly mmapMB: number }): Db {
  const sqlite = openFile(file, options.mmapMB);
  const groupCommit = options.synchronous === 'normal' || !sqlite.name || sqlite.memory ? undefined : new GroupCommit(`${file}-wal`);
  const readTransaction = new PerTickReadTransaction(sqlite);
  let statements: ReturnType<typeof statementCache> | undefined;
  /** A lookup must go through Kysely: a transaction of Kysely's is open on the connection (or nothing is set up yet). */
  const busy = () => !readTransaction.open && (statements?.inTransaction() ?? true);
  const dataVersion = sqlite.prepare('pragma data_version').pluck();
  // Asked once a tick, inside the tick's read transaction when it can be: the lookup after it shares its locks.
  const changes = new ChangeSource((changed) =>
    sqliteRemoteChanges(() => {
      if (!busy()) readTransaction.enter();
      return dataVersion.get() as number;
    }, changed),
  );
  statements = statementCache(sqlite, changes, groupCommit, readTransaction);
  const config = { database: statements };
  const lookups = new PreparedLookups({
    busy,
    prepare(sql) {
      const statement = sqlite.prepare(sql);
      return (values) => {
        readTransaction.enter();
        const row: unknown = statement.get(...values);
        const durable = groupCommit?.pending();
        return durable ? durable.then(() => row) : row;
      };
    },
  });
  const kysely = new RootHandle(
    {
      dialect: groupCommit ? new GroupCommitDialect(config, groupCommit) : new ImmediateSqliteDialect(config),
      ...(options.log ? { log: options.log } : {}),
    },
    lookups,
    groupCommit,
  );
  return {
    kysely,
    dialect: 'sqlite',
    schema: undefined,
    changes,
    groupCommit,
    async ping() {
      sqlite.prepare('SELECT 1').get();
      // After a failed flush of the log every request fails (group commit): the node is not ready.
      await groupCommit?.pending();
    },
    async close() {
      await kysely.destroy();
      await groupCommit?.close();
    },
  };
}

/**
 * The per-tick read transaction: one read transaction shared by the prepared lookups of a tick
 * of the event loop (SQLite).
 *
 * A statement run outside a transaction is a transaction of its own: SQLite takes the database
 * file's shared lock and a WAL read mark, checks the log, and drops them again, a handful of
 * system calls each time, which was most of a GET by id's read. Under load one tick handles many
 * requests, so the first prepared lookup of a tick opens a read transaction (`begin`), the
 * lookups after it in the same tick use it, and it ends when the tick does (`setImmediate`),
 * never later.
 *
 * What a lookup sees is what it would have seen at the first lookup of its tick: another
 * process's commit (the CLI's) made during the tick is seen from the next tick on, as the change
 * source asks `pragma data_version` once a tick too (below). A request that arrived
 * after such a commit is handled in a later tick, so it sees it.
 *
 * It is only ever open while no other transaction is: every statement Kysely runs ends it first
 * (`end`, from the statement cache), so a write is never made inside it and Kysely's BEGIN never
 * meets it, and lookups open it only when the connection has no transaction of Kysely's open.
 */
class PerTickReadTransaction {
  readonly #sqlite: SQLite.Database;
  readonly #begin: SQLite.Statement;
  readonly #commit: SQLite.Statement;
  #opened = false;
  readonly #endOfTick = () => this.end();

  constructor(sqlite: SQLite.Database) {
    this.#sqlite = sqlite;
    this.#begin = sqlite.prepare('begin');
    this.#commit = sqlite.prepare('commit');
  }

  /** Whether this tick's read transaction is open (and so no other transaction is). */
  get open(): boolean {
    return this.#opened;
  }

  /** Opens the tick's read transaction unless it is open already; the caller has checked that no other is. */
  enter(): void {
    if (this.#opened) return;
    this.#begin.run();
    this.#opened = true;
    setImmediate(this.#endOfTick);
  }

  /** Ends it, if open: at the end of the tick, before any statement of Kysely's, and at close. */
  end(): void {
    if (!this.#opened) return;
    this.#opened = false;
    // A read that failed badly enough (an I/O error) may have rolled the transaction back already.
    if (this.#sqlite.open && this.#sqlite.inTransaction) this.#commit.run();
  }
}

/**
 * SQLite: other connections' commits (the CLI's processes), by `pragma data_version`, asked once
 * per tick of the event loop that asks whether changes are heard. A request sent after another
 * process's commit returned arrives after it, so the tick that handles the request, and its first
 * question, come after the commit too: that question sees it. Asking on every use would cost most
 * of what a cache saves (the pragma takes about as long as reading the credential); once a tick,
 * which carries many requests under load, costs little.
 */
function sqliteRemoteChanges(dataVersion: () => number, changed: () => void): RemoteChanges {
  let seen = dataVersion();
  let askedThisTick = false;
  const nextTick = () => {
    askedThisTick = false;
  };
  return {
    fresh() {
      if (!askedThisTick) {
        askedThisTick = true;
        setImmediate(nextTick);
        const version = dataVersion();
        if (version !== seen) {
          seen = version;
          changed();
        }
      }
      return true;
    },
    close: async () => {},
  };
}
