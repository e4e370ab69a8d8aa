import { type RawBuilder, sql } from 'kysely';
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
  await sql`select ${lock}(${lockClass}, ${advisoryKey(key)})`.execute(db);
}

/**
 * The second half of an advisory lock's (class, key): the key itself, or a string's hashtext, in
 * the default schema. Advisory locks belong to the whole database, while the tables belong to a
 * schema: where tables live in another schema (each test has one of its own), the schema's name is
 * hashed in, so that the same website id in two schemas is two locks, not one that their writes
 * would wait for, or deadlock on when they take a website's locks in different orders. The
 * default schema keeps the plain key, so that nodes of different versions take the same locks.
 * `key` may be an SQL expression of type text (a column).
 */
export function advisoryKey(key: number | string | RawBuilder<string>): RawBuilder<number> {
  const plain = typeof key === 'number' ? sql`${key}::int4` : sql`hashtext(${key})`;
  const text = typeof key === 'number' ? String(key) : key;
  return sql<number>`(case when current_schema() = 'public' then ${plain} else hashtext(current_schema() || ':' || ${text}) end)`;
}
