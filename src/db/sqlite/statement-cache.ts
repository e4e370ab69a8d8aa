import type SQLite from 'better-sqlite3';
import { type ChangeSource, connectionWatch } from '../change-source.js';
import type { GroupCommit } from './group-commit.js';

/**
 * The connection Kysely's SQLite dialect is given: better-sqlite3's, with statements reused by
 * SQL text. Kysely prepares every query afresh, and on better-sqlite3 preparing costs about as
 * much as running a by-id SELECT. Queries take their values as parameters, so the set of texts is
 * small; the cache is bounded all the same. Nothing here streams rows, which is the one case
 * where a statement cannot be shared.
 *
 * Each statement, as it goes out, also:
 * - ends the per-tick read transaction (Kysely's statements never run inside it);
 * - is shown to the change source, which counts writes to the tables that decide access;
 * - is counted by the group commit when it writes or commits, so its caller waits for the flush.
 */
export function statementCache(
  sqlite: SQLite.Database,
  changes: ChangeSource,
  groupCommit: GroupCommit | undefined,
  readTransaction: { end(): void },
  limit = 1000,
) {
  const statements = new Map<string, SQLite.Statement>();
  const watch = connectionWatch(changes);
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
      readTransaction.end();
      sqlite.close();
    },
    inTransaction,
    prepare(sql: string) {
      readTransaction.end();
      // Whether a transaction is open before this statement runs; it may open one.
      const open = inTransaction();
      mayBeOpen = true;
      let statement = statements.get(sql);
      if (!statement) {
        statement = sqlite.prepare(sql);
        if (statements.size >= limit) statements.clear();
        statements.set(sql, statement);
      }
      // better-sqlite3 runs the statement right after this returns, before any other request's
      // code, so what comes after it can be said now. Reads (most statements) only cost the test
      // of their first word.
      if (watch.before(sql, open)) watch.after();
      // Kysely's COMMIT is this text; BEGIN and COMMIT count as read-only to SQLite.
      if (groupCommit && (!statement.readonly || sql === 'commit')) groupCommit.wrote();
      return statement;
    },
  };
}
