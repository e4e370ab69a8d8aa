import { type Compilable, Kysely, type KyselyConfig } from 'kysely';
import type { MaybePromise } from '../maybe-async.js';
import type { Database, DbHandle } from './schema.js';
import type { GroupCommit } from './sqlite/group-commit.js';

/** A query a prepared lookup can compile (prepare) or run through Kysely (executeTakeFirst). */
interface LookupQuery<R> extends Compilable {
  executeTakeFirst(): Promise<R | undefined>;
}

/** Where each parameter of a prepared lookup comes from: an argument by name, or a constant of the query. */
type Binding = { readonly arg: string } | { readonly value: unknown };

interface Prepared {
  readonly run: (values: unknown[]) => unknown;
  readonly bindings: readonly Binding[];
}

/** A lookup's query builder, as preparing sees it: arguments in, a compilable query out. */
type Build = (db: DbHandle, args: Record<string, string>) => Compilable;

/** What a dialect gives its prepared lookups. */
interface LookupDriver {
  /** A lookup must go through Kysely now (SQLite while a transaction of Kysely's is open). */
  readonly busy: () => boolean;
  /** Prepares `sql` once; the function returned runs it with the values and gives its first row. */
  readonly prepare: (sql: string) => (values: unknown[]) => unknown;
}

const MARK = '\u0000lookup-arg:';

/**
 * The prepared lookups of one database: by-id reads that run on every request, each from a
 * statement prepared once from its query builder (the builder's identity is the cache key, so a
 * builder is a top-level function).
 */
export class PreparedLookups {
  readonly #driver: LookupDriver;
  readonly #prepared = new Map<unknown, Prepared>();

  constructor(driver: LookupDriver) {
    this.#driver = driver;
  }

  run<A extends Record<string, string | number>, R>(
    db: DbHandle,
    build: (db: DbHandle, args: A) => LookupQuery<R>,
    args: A,
  ): MaybePromise<R | undefined> {
    if (this.#driver.busy()) return build(db, args).executeTakeFirst();
    let prepared = this.#prepared.get(build);
    if (!prepared) {
      prepared = this.#prepare(db, build as unknown as Build, args);
      this.#prepared.set(build, prepared);
    }
    return prepared.run(prepared.bindings.map((b) => ('arg' in b ? args[b.arg] : b.value))) as MaybePromise<R | undefined>;
  }

  /**
   * `build` is called with a marker in place of each argument, and each compiled parameter is
   * bound to the argument whose marker it holds, or kept as the query's own constant. `build`
   * must therefore pass its arguments into the query unchanged (every one is checked).
   */
  #prepare(db: DbHandle, build: Build, args: Record<string, unknown>): Prepared {
    const markers = Object.fromEntries(Object.keys(args).map((name) => [name, `${MARK}${name}`]));
    const compiled = build(db, markers).compile();
    const bindings: Binding[] = compiled.parameters.map((p) =>
      typeof p === 'string' && p.startsWith(MARK) ? { arg: p.slice(MARK.length) } : { value: p },
    );
    for (const name of Object.keys(args)) {
      if (!bindings.some((b) => 'arg' in b && b.arg === name))
        throw new Error(`prepared lookup: argument "${name}" does not reach the query`);
    }
    return { run: this.#driver.prepare(compiled.sql), bindings };
  }
}

/**
 * The handle a database is opened with: Kysely, carrying the parts a query beside Kysely needs.
 * A transaction's handle (Kysely makes a plain one) carries none: its reads run through Kysely,
 * inside it, and whoever commits it waits for the group commit through the Db.
 */
export class RootHandle extends Kysely<Database> {
  readonly lookups: PreparedLookups;
  readonly groupCommit: GroupCommit | undefined;

  constructor(config: KyselyConfig, lookups: PreparedLookups, groupCommit?: GroupCommit) {
    super(config);
    this.lookups = lookups;
    this.groupCommit = groupCommit;
  }
}

/**
 * One row of a prepared lookup (a by-id read that runs on every request), with the arguments
 * bound by name:
 * - on the root handle, from a statement prepared once from `build`:
 *   - on SQLite, a better-sqlite3 statement, inside the per-tick read transaction. While a
 *     transaction of Kysely's is open the statement would bypass Kysely's connection lock and
 *     could see another request's uncommitted writes on the one connection, so there `build`
 *     runs as an ordinary Kysely query. The row comes at once, without a promise, unless a commit
 *     is still being made durable (group commit): a GET by id needs no promise from its
 *     credential to its answer;
 *   - on PostgreSQL, a named statement on the pool's connections: each connection parses and
 *     plans it once instead of on every run. Lookups name their columns, so a migration that adds
 *     a column does not change what a prepared statement returns;
 * - on a transaction's handle, `build` runs through Kysely, in the transaction.
 */
export function preparedLookup<A extends Record<string, string | number>, R>(
  db: DbHandle,
  build: (db: DbHandle, args: A) => LookupQuery<R>,
  args: A,
): MaybePromise<R | undefined> {
  return db instanceof RootHandle ? db.lookups.run(db, build, args) : build(db, args).executeTakeFirst();
}

/** The group commit a write on `db` waits for before it is acknowledged (SQLite, SQLITE_SYNCHRONOUS=full); undefined otherwise. */
export function groupCommitOf(db: DbHandle): GroupCommit | undefined {
  return db instanceof RootHandle ? db.groupCommit : undefined;
}
