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
