import type PG from 'pg';
import type { MaybePromise } from '../maybe-async.js';
import type { DbHandle } from './schema.js';

/**
 * Who a credential proved to be on the last request that presented it, kept per process so that a
 * request needs no read, decoding or key check of its own to be authenticated: the
 * methods key what they keep by the SHA-256 of the credentials as sent (auth/api-key.ts,
 * auth/bearer.ts), so no key or token is held in the clear. Whatever the database
 * says changed drops every kept value at once: changes are rare (a revocation, a token's end, a
 * connection's end), and reading again is what a request did anyway. Nothing kept is state another
 * node needs: each node learns of a change from the database.
 *
 * - **This process's own writes** are seen by their SQL as it goes to the database
 *   (`connectionWatch`): a write to a table that decides a credential's or token's life drops
 *   everything, and so does the end of the transaction that made it. A read is kept only if nothing
 *   was dropped while it ran, so a read that saw the state before the commit is never kept past it,
 *   and the request after a revocation is refused on the node that revoked, as it was before
 *   anything was kept.
 * - **Other processes' writes**: on PostgreSQL, triggers (migration 0009) send a notification on
 *   channel `cms_changes`, which each node listens for on a connection of its own; until it listens,
 *   and whenever that connection is lost, nothing is kept or used. On SQLite, whose other writers
 *   are the CLI's processes, `pragma data_version` says whether another connection has committed
 *   (`sqliteRemoteChanges`).
 * - **No value is kept longer than `KEEP_MS`**, in case a listening connection was cut without
 *   either end noticing.
 *
 * Values that depend on the time (a token's expiry) are kept with their expiry, and the caller
 * checks it on every use.
 */
export const KEEP_MS = 10_000;
const KEEP_MAX = 10_000;

/** The tables whose rows decide whether a credential or token is live, or whose deletion cascades to those. */
const WATCHED = /"(?:api_credentials|oauth_payloads|oauth_connections|oauth_clients|sites|users|site_users)"/;
const READ = /^\s*(?:select|pragma)\b/i;
const BEGIN = /^\s*(?:begin|start\s+transaction)\b/i;
const END = /^\s*(?:commit|rollback)\b/i;

export type StatementKind = 'read' | 'write' | 'begin' | 'end';

/** What a statement does, as far as kept values go: a write here is one to a watched table. */
export function statementKind(sql: string): StatementKind {
  if (READ.test(sql)) return 'read';
  if (BEGIN.test(sql)) return 'begin';
  if (END.test(sql)) return 'end';
  return WATCHED.test(sql) ? 'write' : 'read';
}

/** How a keep hears of other processes' changes: made with the keep's `changed`, which it calls for each. */
export interface RemoteChanges {
  /** Whether kept values may be used now; it may first drop them. */
  readonly fresh: () => boolean;
  readonly close: () => Promise<void>;
}

interface Entry {
  readonly value: unknown;
  readonly until: number;
}

export class CredentialKeep {
  #entries = new Map<string, Entry>();
  /** Counts the drops: a read is kept only if it is the same when the read ends as when it began. */
  #generation = 0;
  readonly #remote: RemoteChanges;
  /** Reads answered from the keep and from the database, for the tests. */
  readonly counts = { kept: 0, read: 0 };

  constructor(remote: (changed: () => void) => RemoteChanges) {
    this.#remote = remote(() => this.changed());
  }

  /** Drops every kept value; a read already under way is not kept either. */
  changed(): void {
    this.#entries.clear();
    this.#generation += 1;
  }

  /**
   * The value kept for `key`, at once, without a promise; or a promise of `read()`'s, kept when
   * nothing changed while it was read, for KEEP_MS or until the time (ms) `until` gives for it,
   * whichever comes first: a value that stops being true at a known time is not used past it.
   */
  read<V>(key: string, read: () => MaybePromise<V | undefined>, until?: (value: V) => number | undefined): MaybePromise<V | undefined> {
    const usable = this.#remote.fresh();
    if (usable) {
      const entry = this.#entries.get(key);
      if (entry && entry.until > Date.now()) {
        this.counts.kept += 1;
        return entry.value as V;
      }
    }
    return this.#readAndKeep(key, read, usable, until);
  }

  async #readAndKeep<V>(
    key: string,
    read: () => MaybePromise<V | undefined>,
    usable: boolean,
    until: ((value: V) => number | undefined) | undefined,
  ): Promise<V | undefined> {
    const generation = this.#generation;
    const value = await read();
    this.counts.read += 1;
    // A listening connection lost or opened meanwhile has dropped everything too (RemoteChanges).
    if (usable && value !== undefined && generation === this.#generation) {
      if (this.#entries.size >= KEEP_MAX) this.#entries.clear();
      this.#entries.set(key, { value, until: Math.min(Date.now() + KEEP_MS, until?.(value) ?? Number.POSITIVE_INFINITY) });
    }
    return value;
  }

  /** The keys of what is kept now, for the tests. */
  keys(): string[] {
    return [...this.#entries.keys()];
  }

  close(): Promise<void> {
    this.changed();
    return this.#remote.close();
  }
}

const keeps = new WeakMap<DbHandle, CredentialKeep>();

export function registerKeep(db: DbHandle, keep: CredentialKeep): void {
  keeps.set(db, keep);
}

/** The keep of a database handle; undefined for a transaction's handle (its reads belong to it). */
export function keepOf(db: DbHandle): CredentialKeep | undefined {
  return keeps.get(db);
}

/** A read through the database's keep when it has one (see CredentialKeep.read), or straight from the database. */
export function readKept<V>(
  db: DbHandle,
  key: string,
  read: () => MaybePromise<V | undefined>,
  until?: (value: V) => number | undefined,
): MaybePromise<V | undefined> {
  const keep = keeps.get(db);
  return keep ? keep.read(key, read, until) : read();
}

/**
 * One connection's statements, as the keep needs them: a write to a watched table drops what is
 * kept, and so does the end of the transaction it was in, or the end of the statement itself
 * outside a transaction.
 */
export function connectionWatch(keep: CredentialKeep) {
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
      keep.changed();
      if (transactionOpen) changedInTransaction = true;
      return !transactionOpen;
    },
    /** After a statement `before` returned true for. */
    after(): void {
      keep.changed();
    },
    /** The connection went back to its pool or closed: whatever it had open has ended. */
    released(): void {
      inTransaction = false;
      if (changedInTransaction) {
        changedInTransaction = false;
        keep.changed();
      }
    },
  };
}

/**
 * SQLite: other connections' commits (the CLI's processes), by `pragma data_version`, asked once
 * per turn of the event loop that uses the keep. A request sent after another process's commit
 * returned arrives after it, so the turn that handles the request, and its first use of the keep,
 * come after the commit too: that use asks, and sees it. Asking on every use would cost most of
 * what keeping saves (the pragma takes about as long as reading the credential); once per turn,
 * which carries many requests under load, it costs about 1 %.
 */
export function sqliteRemoteChanges(dataVersion: () => number, changed: () => void): RemoteChanges {
  let seen = dataVersion();
  let askedThisTurn = false;
  const nextTurn = () => {
    askedThisTurn = false;
  };
  return {
    fresh() {
      if (!askedThisTurn) {
        askedThisTurn = true;
        setImmediate(nextTurn);
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

/** The channel migration 0009's triggers notify. */
export const CHANGES_CHANNEL = 'cms_changes';
const RELISTEN_MS = 1000;

/**
 * PostgreSQL: notifications on CHANGES_CHANNEL, on a connection of its own (`cms-changes <pid>` in
 * pg_stat_activity), opened on first use. Any notification drops everything (a payload names the
 * table; another schema's changes on the same database drop them too, which costs a read and is
 * never wrong). Opening and losing the connection drop everything as well. A lost one is opened
 * again after RELISTEN_MS; until then nothing is used.
 */
export function postgresRemoteChanges(
  pg: typeof PG,
  config: PG.ClientConfig,
  onLost: (error: Error) => void,
  changed: () => void,
): RemoteChanges {
  let listening = false;
  let started = false;
  let closed = false;
  let client: PG.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  /** Told of this outage already: while the database is away each new attempt fails too, and says nothing new. */
  let reported = false;

  const lost = (from: PG.Client, error: Error) => {
    if (client !== from) return;
    client = undefined;
    listening = false;
    changed();
    from.end().catch(() => {});
    if (closed) return;
    if (!reported) onLost(error);
    reported = true;
    retry = setTimeout(listen, RELISTEN_MS);
    retry.unref();
  };

  const listen = async () => {
    if (closed) return;
    const next = new pg.Client({
      ...config,
      application_name: `cms-changes ${process.pid}`,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    client = next;
    next.on('notification', changed);
    next.on('error', (error) => lost(next, error));
    next.on('end', () => lost(next, new Error('the connection that listens for changes ended')));
    try {
      await next.connect();
      await next.query(`LISTEN ${CHANGES_CHANNEL}`);
      if (client !== next) return;
      changed();
      listening = true;
      reported = false;
    } catch (error) {
      lost(next, error instanceof Error ? error : new Error(String(error)));
    }
  };

  return {
    fresh() {
      if (!started && !closed) {
        started = true;
        void listen();
      }
      return listening;
    },
    async close() {
      closed = true;
      listening = false;
      clearTimeout(retry);
      const open = client;
      client = undefined;
      await open?.end().catch(() => {});
    },
  };
}
