/**
 * Queries that pages and blogs both need, so neither feature imports the other: a page of the
 * website exists, the pages a visitor may not see, the blogs a page holds, and a list's total.
 */
import { type SelectQueryBuilder, sql } from 'kysely';
import { preparedLookup } from '../../db/prepared-lookup.js';
import type { Database, DbHandle } from '../../db/schema.js';

export async function pageExists(db: DbHandle, siteId: number, id: number): Promise<boolean> {
  const row = await db.selectFrom('pages').select('page').where('site_id', '=', siteId).where('page', '=', id).executeTakeFirst();
  return row !== undefined;
}

/**
 * Pages a visitor may not see: member-only pages and everything below them, whatever its own
 * setting. Public page lists leave them out; public blog lists need a page outside them.
 */
export function hiddenPages(siteId: number) {
  return sql<{ page: number }>`(with recursive hidden(page) as (
      select page from pages where site_id = ${siteId} and (page_privacy <> 0 or page_privacy_groupid <> 0)
      union
      select p.page from pages p join hidden h on p.page_parent = h.page where p.site_id = ${siteId}
    ) select page from hidden)`;
}

export async function countBlogsOnPage(db: DbHandle, siteId: number, page: number): Promise<number> {
  const row = await db
    .selectFrom('blogs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('site_id', '=', siteId)
    .where('page', '=', page)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

function totalsQuery(db: DbHandle, { siteId }: { siteId: number }) {
  return db.selectFrom('content_totals').select(['pages', 'blogs']).where('site_id', '=', siteId);
}

/**
 * A list's total. `matching` is the list's filtered query, counted; without one the list is every
 * record of the website, and its total is the count the database keeps (migration 0010), one row
 * by key, whatever the table's size.
 */
export async function listTotal<T extends 'pages' | 'blogs'>(
  db: DbHandle,
  siteId: number,
  table: T,
  matching: SelectQueryBuilder<Database, T, object> | undefined,
): Promise<number> {
  if (!matching) {
    const kept = await preparedLookup(db, totalsQuery, { siteId });
    return kept ? Number(kept[table]) : 0;
  }
  return Number((await counting(matching).executeTakeFirstOrThrow()).total);
}

/** The query that counts a list's filtered query (listTotal). */
export function counting<T extends 'pages' | 'blogs'>(matching: SelectQueryBuilder<Database, T, object>) {
  return (matching as SelectQueryBuilder<Database, 'pages' | 'blogs', object>).select((eb) => eb.fn.countAll<number>().as('total'));
}
