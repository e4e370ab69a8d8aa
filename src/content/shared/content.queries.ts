/**
 * Queries that pages and blogs both need, so neither feature imports the other: a page of the
 * website exists, the pages a visitor may not see, and the blogs a page holds.
 */
import { sql } from 'kysely';
import type { DbHandle } from '../../db/schema.js';

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
