import type { Db } from './database.js';

/**
 * Runs `work` in a transaction: the caller's, when `db` is already inside one, or a new one.
 * Services open their own transaction for each write; joining an open one lets a caller (the demo
 * seeder, an import) make several service calls atomic. Kysely refuses to nest transactions.
 */
export async function inTransaction<T>(db: Db, work: (tx: Db) => Promise<T>): Promise<T> {
  if (db.kysely.isTransaction) return work(db);
  return db.kysely.transaction().execute((trx) => work({ ...db, kysely: trx }));
}
