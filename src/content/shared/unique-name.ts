import { type SqlBool, sql } from 'kysely';
import type { DbHandle } from '../../db/schema.js';
import { lockInTransaction } from '../../db/transaction.js';
import { escapeLike } from './filters.js';
import { firstFree } from './slug.js';

/** A website-unique SEO name column: page aliases, blog filenames. */
interface NameColumn {
  readonly table: 'pages' | 'blogs';
  readonly column: 'page_alias' | 'info_filename';
  /** The table's record id: a record being renamed does not stand in its own way. */
  readonly idColumn: 'page' | 'info_id';
  /** Class id of the pg_advisory_xact_lock(class, site) that serialises choosing a name. */
  readonly lockClass: number;
}

export const PAGE_ALIAS: NameColumn = { table: 'pages', column: 'page_alias', idColumn: 'page', lockClass: 7301 };
export const BLOG_FILENAME: NameColumn = { table: 'blogs', column: 'info_filename', idColumn: 'info_id', lockClass: 7302 };

/**
 * The first free name from `wanted` (`wanted`, `wanted-2`, …), not counting the name of record
 * `self` (an update choosing its own record's name again keeps it). Call it inside the write
 * transaction: on PostgreSQL it holds the website's lock for that column until commit, so two
 * nodes inserting the same title at once get -2 and -3 instead of a unique-index error (SQLite
 * writes are serial anyway).
 */
export async function uniqueName(db: DbHandle, target: NameColumn, siteId: number, wanted: string, self?: number): Promise<string> {
  await lockInTransaction(db, target.lockClass, siteId);
  const pattern = `${escapeLike(wanted)}-%`;
  const column = sql.ref(target.column);
  const rows = await sql<{ name: string }>`select ${column} as name from ${sql.table(target.table)}
    where site_id = ${siteId} and ${sql.ref(target.idColumn)} <> ${self ?? 0}
      and (${column} = ${wanted} or ${sql<SqlBool>`${column} like ${pattern} escape '\\'`})`.execute(db);
  return firstFree(
    wanted,
    rows.rows.map((r) => r.name),
  );
}
