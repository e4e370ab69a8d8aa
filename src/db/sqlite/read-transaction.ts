import type SQLite from 'better-sqlite3';

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
 * source asks `pragma data_version` once a tick too (data-version.ts). A request that arrived
 * after such a commit is handled in a later tick, so it sees it.
 *
 * It is only ever open while no other transaction is: every statement Kysely runs ends it first
 * (`end`, from the statement cache), so a write is never made inside it and Kysely's BEGIN never
 * meets it, and lookups open it only when the connection has no transaction of Kysely's open.
 */
export class PerTickReadTransaction {
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
