import { type Kysely, sql } from 'kysely';

/**
 * What other layers may keep in memory about the rows that decide access (auth's principal cache)
 * is valid only until one of those rows changes. A ChangeSource counts such changes, from every
 * writer:
 * - **this process's own writes**, seen by their SQL as each statement goes to the database
 *   (`connectionWatch`, called by the dialect's driver): a write to one of ACCESS_TABLES counts,
 *   and so does the end of the transaction it was in, so a value read before the commit is never
 *   used after it;
 * - **other processes' writes**, heard through the dialect's RemoteChanges: on PostgreSQL, the
 *   notifications the triggers generated from ACCESS_TABLES send (postgres/listen.ts); on SQLite,
 *   whose other writers are the CLI's processes, `pragma data_version` (sqlite/database.ts).
 *
 * It keeps no values itself: a cache compares `generation` before and after it reads, and uses
 * what it holds only while `fresh()` says changes are being heard.
 */
export class ChangeSource {
  #generation = 0;
  readonly #remote: RemoteChanges;

  constructor(remote: (changed: () => void) => RemoteChanges) {
    this.#remote = remote(() => this.changed());
  }

  /** Changes counted so far: a value read while this stayed the same is still true. */
  get generation(): number {
    return this.#generation;
  }

  /** A row that decides access changed, or may have (a listening connection opened or was lost). */
  changed(): void {
    this.#generation += 1;
  }

  /** Whether other processes' changes are being heard now (it may first count one it just heard of). */
  fresh(): boolean {
    return this.#remote.fresh();
  }

  close(): Promise<void> {
    this.changed();
    return this.#remote.close();
  }
}

/** How a ChangeSource hears of other processes' changes: made with its `changed`, which it calls for each. */
export interface RemoteChanges {
  /** Whether changes are being heard now; it may first report one. */
  readonly fresh: () => boolean;
  readonly close: () => Promise<void>;
}

/**
 * A table whose rows decide whether a credential or token is live, or whose deletion cascades to
 * such rows, and which of its changes count.
 */
interface AccessTable {
  readonly table: string;
  /** Only rows for which this holds count; `ROW` stands for the row (old or new). Every row when absent. */
  readonly rows?: string;
  /** An update counts when one of these columns changes ('*': any update of a counted row); none when absent. */
  readonly columns?: readonly string[] | '*';
  /** An update also counts when this holds (a condition on old and new). */
  readonly alsoWhen?: string;
}

/**
 * The one list of tables that decide access. It drives both the SQLite statement check
 * (statementKind) and the PostgreSQL notifications (accessTriggers, created by a migration). A
 * table added here needs a migration that calls accessTriggers for it; a test fails until it has
 * one. Inserts never count: nothing absent is ever kept. Last-use times, which every node writes,
 * do not count either (they are not among the columns).
 */
export const ACCESS_TABLES: readonly AccessTable[] = [
  { table: 'api_credentials', columns: ['revoked_at', 'key_hash', 'site_id', 'api_id'] },
  { table: 'oauth_payloads', rows: "ROW.model = 'AccessToken'", columns: '*' },
  { table: 'oauth_connections', columns: ['status', 'site_id', 'grant_id'], alsoWhen: 'new.expires_at < old.expires_at' },
  { table: 'oauth_clients' },
  { table: 'sites' },
  { table: 'users' },
  { table: 'site_users' },
];

/** The channel the access triggers notify, with the table's name as payload. */
export const CHANGES_CHANNEL = 'cms_changes';

/** The PostgreSQL function every access trigger runs. */
export const NOTIFY_FUNCTION = 'cms_notify_change';

/** The names of the triggers accessTriggers makes for a table. */
export function accessTriggerNames(table: string): { deleted: string; changed: string } {
  return { deleted: `${table}_access_deleted`, changed: `${table}_access_changed` };
}

/**
 * PostgreSQL: creates the triggers that notify CHANGES_CHANNEL when a counted change to `tables`
 * commits, from whichever node or tool made it (PostgreSQL sends it at commit, once per
 * transaction and payload): any deletion of a counted row (cascades included), and the updates
 * the table's entry names. Expects NOTIFY_FUNCTION to exist.
 */
export async function accessTriggers(db: Kysely<unknown>, tables: readonly AccessTable[]): Promise<void> {
  for (const { table, rows, columns, alsoWhen } of tables) {
    const names = accessTriggerNames(table);
    const on = (row: 'old' | 'new') => rows?.replaceAll('ROW', row);
    const deletedWhen = on('old');
    await sql
      .raw(
        `create trigger ${names.deleted} after delete on ${table} for each row ` +
          `${deletedWhen ? `when (${deletedWhen}) ` : ''}execute function ${NOTIFY_FUNCTION}()`,
      )
      .execute(db);
    if (!columns) continue;
    const changes =
      columns === '*'
        ? [rows ? `(${on('old')}) or (${on('new')})` : 'true']
        : [...columns.map((c) => `old.${c} is distinct from new.${c}`), ...(alsoWhen ? [alsoWhen] : [])];
    const counted = columns !== '*' && rows ? `(${on('old')} or ${on('new')}) and ` : '';
    await sql
      .raw(
        `create trigger ${names.changed} after update on ${table} for each row ` +
          `when (${counted}(${changes.join(' or ')})) execute function ${NOTIFY_FUNCTION}()`,
      )
      .execute(db);
  }
}

const WRITES_ACCESS = new RegExp(`"(?:${ACCESS_TABLES.map((t) => t.table).join('|')})"`);
const READ = /^\s*(?:select|pragma)\b/i;
const BEGIN = /^\s*(?:begin|start\s+transaction)\b/i;
const END = /^\s*(?:commit|rollback)\b/i;

type StatementKind = 'read' | 'write' | 'begin' | 'end';

/**
 * What a statement does, as far as changes to access go: a write here is one that names a table of
 * ACCESS_TABLES (Kysely quotes every table name). A write it cannot rule out counts: counting one
 * too many costs a cache a read, missing one would use a revoked credential.
 */
export function statementKind(sql: string): StatementKind {
  if (READ.test(sql)) return 'read';
  if (BEGIN.test(sql)) return 'begin';
  if (END.test(sql)) return 'end';
  return WRITES_ACCESS.test(sql) ? 'write' : 'read';
}

/**
 * One connection's statements, as the ChangeSource needs them: a write to an access table counts
 * a change, and so does the end of the transaction it was in, or the end of the statement itself
 * outside a transaction.
 */
export function connectionWatch(changes: ChangeSource) {
  let inTransaction = false;
  let changedInTransaction = false;
  return {
    /** Before `sql` runs. True when the caller must call `after()` once it has run (or failed). */
    before(sql: string, transactionOpen = inTransaction): boolean {
      const kind = statementKind(sql);
      if (kind === 'read') return false;
      if (kind === 'begin') {
        inTransaction = true;
        return false;
      }
      if (kind === 'end') {
        inTransaction = false;
        const changed = changedInTransaction;
        changedInTransaction = false;
        return changed;
      }
      changes.changed();
      if (transactionOpen) changedInTransaction = true;
      return !transactionOpen;
    },
    /** After a statement `before` returned true for. */
    after(): void {
      changes.changed();
    },
    /** The connection went back to its pool or closed: whatever it had open has ended. */
    released(): void {
      inTransaction = false;
      if (changedInTransaction) {
        changedInTransaction = false;
        changes.changed();
      }
    },
  };
}
