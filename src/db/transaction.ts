import { sql } from 'kysely';
import { dialectOf } from './database.js';
import type { DbHandle } from './schema.js';

/**
 * Runs `work` in a transaction: the caller's, when `db` is already inside one, or a new one.
 * Services open their own transaction for each write; joining an open one lets a caller (the demo
 * seeder, an import) make several service calls atomic. Kysely refuses to nest transactions.
 */
export async function inTransaction<T>(db: DbHandle, work: (trx: DbHandle) => Promise<T>): Promise<T> {
  if (db.isTransaction) return work(db);
  return db.transaction().execute(work);
}

/**
 * Runs reads that must agree with each other (rows and the rows that belong to them) on one
 * snapshot of the database: on PostgreSQL a read-only REPEATABLE READ transaction, since under the
 * default READ COMMITTED each statement sees the commits made before it began, so a second read
 * could see a commit the first did not. A SQLite transaction reads one snapshot already. Inside
 * a caller's transaction, that one's.
 */
export async function inSnapshot<T>(db: DbHandle, work: (trx: DbHandle) => Promise<T>): Promise<T> {
  if (db.isTransaction) return work(db);
  return db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(work);
}

/**
 * PostgreSQL's advisory lock (class, key), held until the transaction `db` is in ends: transactions
 * on any node that take the same one run what follows one at a time. A string key is hashed
 * (hashtext). `shared` holders run beside each other and only exclude an exclusive holder (many
 * writers, one clean-up). SQLite runs one write transaction at a time, so there is nothing to take.
 * Classes in use: 7301 page aliases and 7302 blog filenames, keyed by website; 7302 with key 0 the
 * demo seed (no website has id 0); 7303 OAuth grants; 7304 with key 0 image references; 7305 the
 * page tree and 7306 the webhooks, keyed by website.
 */
export async function lockInTransaction(
  db: DbHandle,
  lockClass: number,
  key: number | string,
  mode: 'exclusive' | 'shared' = 'exclusive',
): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  const lock = mode === 'shared' ? sql`pg_advisory_xact_lock_shared` : sql`pg_advisory_xact_lock`;
  await sql`select ${lock}(${lockClass}, ${typeof key === 'string' ? sql`hashtext(${key})` : key})`.execute(db);
}
