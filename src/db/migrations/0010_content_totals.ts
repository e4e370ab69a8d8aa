import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

/** The tables counted, each by the column of content_totals named after it. */
const COUNTED = ['pages', 'blogs'] as const;

/**
 * How many pages and blogs each website has, kept by the database itself: a trigger on every
 * insert and delete (and a move to another website, which the service never makes) changes the
 * website's row in the same transaction as the write, whoever writes (the service, the CLI, an
 * import, a migration). An unfiltered list then reads its total as one row by key instead of a
 * count(*) that walks every record of the website, whose cost grows with the website
 * (bench/README.md). Filtered lists still count what they match.
 *
 * - SQLite: plain row triggers; its writes are serial already.
 * - PostgreSQL: deferred constraint triggers, which run at commit. The website's row is then locked
 *   only from the commit's start to its end, not for the rest of the transaction, so two writers on
 *   one website wait for each other's commit at most, and no lock taken later in a transaction can
 *   deadlock against it. An insert counts only if its website still exists at commit (a website
 *   deleted in the same transaction takes its row with it). PostgreSQL alters and indexes no
 *   table with such triggers pending: a transaction that writes pages or blogs and then alters or
 *   indexes them runs `set constraints all immediate` between (the migrator does after each
 *   migration: `settled` in migrate.ts; a loader or a single migration does it itself).
 *   The functions keep the migration's search_path, so a session whose own path differs (psql
 *   on a schema-qualified table) still counts into this schema's totals.
 *
 * A website with no row has no pages or blogs. The triggers are created before the rows are filled
 * in, in the migration's transaction: on PostgreSQL creating them locks out writes until it commits,
 * so no write falls between the count and the triggers.
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  await sql`create table content_totals (
    site_id integer primary key references sites(id) on delete cascade,
    pages integer not null default 0,
    blogs integer not null default 0)`.execute(db);
  for (const table of COUNTED) {
    if (dialect === 'postgres') await countOnPostgres(db, table);
    else await countOnSqlite(db, table);
  }
  await sql`insert into content_totals (site_id, pages, blogs)
    select s.id,
      (select count(*) from pages p where p.site_id = s.id),
      (select count(*) from blogs b where b.site_id = s.id)
    from sites s`.execute(db);
}

async function countOnSqlite(db: Kysely<unknown>, table: (typeof COUNTED)[number]): Promise<void> {
  const column = sql.id(table);
  const add = (site: string) =>
    sql`insert into content_totals (site_id, ${column}) values (${sql.raw(site)}.site_id, 1)
      on conflict (site_id) do update set ${column} = ${column} + 1;`;
  const remove = (site: string) => sql`update content_totals set ${column} = ${column} - 1 where site_id = ${sql.raw(site)}.site_id;`;
  await sql`create trigger ${sql.id(`${table}_counted`)} after insert on ${sql.table(table)} begin ${add('new')} end`.execute(db);
  await sql`create trigger ${sql.id(`${table}_uncounted`)} after delete on ${sql.table(table)} begin ${remove('old')} end`.execute(db);
  await sql`create trigger ${sql.id(`${table}_recounted`)} after update of site_id on ${sql.table(table)}
    when old.site_id <> new.site_id begin ${remove('old')} ${add('new')} end`.execute(db);
}

async function countOnPostgres(db: Kysely<unknown>, table: (typeof COUNTED)[number]): Promise<void> {
  const column = sql.id(table);
  const fn = sql.id(`cms_count_${table}`);
  await sql`
    create function ${fn}() returns trigger language plpgsql set search_path from current as $$
    begin
      if tg_op in ('DELETE', 'UPDATE') then
        update content_totals set ${column} = ${column} - 1 where site_id = old.site_id;
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        insert into content_totals (site_id, ${column})
          select new.site_id, 1 where exists (select 1 from sites where id = new.site_id)
          on conflict (site_id) do update set ${column} = content_totals.${column} + 1;
      end if;
      return null;
    end $$`.execute(db);
  const trigger = (name: string, event: ReturnType<typeof sql>, when = sql``) =>
    sql`create constraint trigger ${sql.id(`${table}_${name}`)} after ${event} on ${sql.table(table)}
      deferrable initially deferred for each row ${when} execute function ${fn}()`.execute(db);
  await trigger('counted', sql`insert or delete`);
  await trigger('recounted', sql`update of site_id`, sql`when (old.site_id is distinct from new.site_id)`);
}
