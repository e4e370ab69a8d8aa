import type SQLite from 'better-sqlite3';

/**
 * One read transaction shared by the hot reads of a turn of the event loop (SQLite).
 *
 * A statement run outside a transaction is a transaction of its own: SQLite takes the database
 * file's shared lock and a WAL read mark, checks the log, and drops them again, a handful of
 * system calls each time. For a GET by id that was most of its read (bench/README.md has the
 * figures). Under load one turn handles
 * many requests, so the first hot read of a turn opens a read transaction (`begin`), the reads
 * after it in the same turn use it, and it ends when the turn does (`setImmediate`), never later.
 *
 * What a read sees is what it would have seen at the first read of its turn: another process's
 * commit (the CLI's) made during the turn is seen from the next turn on, as the credential keep
 * already asks `pragma data_version` once a turn (credential-keep.ts). A request that arrived
 * after such a commit is handled in a later turn, so it sees it.
 *
 * It is only ever open while no other transaction is: every statement Kysely runs ends it first
 * (`end`, from the statement cache), so a write is never made inside it and Kysely's BEGIN never
 * meets it, and hot reads open it only when the connection has no transaction of Kysely's open.
 */
export class TurnSnapshot {
  private readonly begin: SQLite.Statement;
  private readonly commit: SQLite.Statement;
  private opened = false;
  private readonly endOfTurn = () => this.end();

  constructor(private readonly sqlite: SQLite.Database) {
    this.begin = sqlite.prepare('begin');
    this.commit = sqlite.prepare('commit');
  }

  /** Whether this turn's read transaction is open (and so no other transaction is). */
  get open(): boolean {
    return this.opened;
  }

  /** Opens the turn's read transaction unless it is open already; the caller has checked that no other is. */
  enter(): void {
    if (this.opened) return;
    this.begin.run();
    this.opened = true;
    setImmediate(this.endOfTurn);
  }

  /** Ends it, if open: at the end of the turn, before any statement of Kysely's, and at close. */
  end(): void {
    if (!this.opened) return;
    this.opened = false;
    // A read that failed badly enough (an I/O error) may have rolled the transaction back already.
    if (this.sqlite.open && this.sqlite.inTransaction) this.commit.run();
  }
}
