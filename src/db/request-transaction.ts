import { AsyncLocalStorage } from 'node:async_hooks';
import type { ControlledTransaction } from 'kysely';
import { groupCommitOf } from './prepared-lookup.js';
import type { Database, DbHandle } from './schema.js';

/**
 * One transaction for the writes of one request, opened by its first write (readHandle and
 * writeHandle below) and ended when the request's work ends. A token request makes four writes:
 * as autocommits they cost four commits on SQLite, each waiting for a flush (sqlite/group-commit.ts), and
 * four round trips on PostgreSQL; in one transaction they cost one, and a token rotation is all or
 * nothing.
 *
 * Opened lazily so that reading the request body, the client and the token, which come first,
 * hold nothing: on SQLite the one connection is the transaction's until it ends, and every other
 * query waits.
 */
interface Scope {
  readonly db: DbHandle;
  /** The transaction, once the first write has opened (or begun to open) it. */
  trx: Promise<ControlledTransaction<Database>> | undefined;
  /** A revocation happened: it is committed even if the request ends in an error. */
  keep: boolean;
  ended: boolean;
}

const scopes = new AsyncLocalStorage<Scope>();

function scopeOf(db: DbHandle): Scope | undefined {
  const scope = scopes.getStore();
  return scope && scope.db === db && !scope.ended ? scope : undefined;
}

/**
 * The handle a read inside a request's scope must use: its transaction once one is open. On
 * SQLite anything else would wait for the connection the transaction holds, for good.
 */
export async function readHandle(db: DbHandle): Promise<DbHandle> {
  const trx = scopeOf(db)?.trx;
  return trx ? await trx : db;
}

/** The handle for a write: the request's transaction, opened now if it is the first write. */
export async function writeHandle(db: DbHandle): Promise<DbHandle> {
  const scope = scopeOf(db);
  if (!scope) return db;
  scope.trx ??= db
    .startTransaction()
    .execute()
    .catch((error: unknown) => {
      scope.trx = undefined;
      throw error;
    });
  return scope.trx;
}

/**
 * Marks what the request has written as kept even if it answers an error: a refresh token or code
 * replayed revokes its grant and then refuses the request (invalid_grant), and the revocation
 * must stand.
 */
export function keepRequestWrites(db: DbHandle): void {
  const scope = scopeOf(db);
  if (scope) scope.keep = true;
}

/**
 * Runs `work` with a request-scoped transaction on `db` (see above). At the end it commits when
 * `succeeded()` says so or a revocation was kept, and rolls back otherwise: a rotation that failed
 * half way leaves the old refresh token as it was. Work that outlives the scope uses `db` again.
 */
export async function withRequestTransaction<T>(db: DbHandle, work: () => Promise<T>, succeeded: () => boolean): Promise<T> {
  const scope: Scope = { db, trx: undefined, keep: false, ended: false };
  let ok = false;
  try {
    const result = await scopes.run(scope, work);
    ok = succeeded();
    return result;
  } finally {
    scope.ended = true;
    const trx = await scope.trx?.catch(() => undefined);
    if (trx) await end(db, trx, ok || scope.keep);
  }
}

async function end(db: DbHandle, trx: ControlledTransaction<Database>, commit: boolean): Promise<void> {
  if (!commit) return trx.rollback().execute();
  try {
    await trx.commit().execute();
    // On SQLite the commit is on disk once the shared flush has covered it (sqlite/group-commit.ts); the
    // answer, with the tokens it names, goes out only then.
    await groupCommitOf(db)?.pending();
  } catch (error) {
    // A failed COMMIT keeps the connection (Kysely releases it on rollback only): on SQLite the
    // transaction would stay open and hold the one connection for good.
    await trx
      .rollback()
      .execute()
      .catch(() => undefined);
    throw error;
  }
}
