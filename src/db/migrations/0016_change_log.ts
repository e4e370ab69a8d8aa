import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';
import { formatTimestamp } from '../time.js';

/**
 * The change log: one row per change of a page or blog, written in the change's own transaction,
 * never updated. The feed, the revisions, the actors and undo all read it.
 *
 * - `seq` counts each website's changes. It is handed out by the website's row of
 *   `change_counters`, updated as the last step of the write: on PostgreSQL that row stays locked
 *   until the transaction ends, so a website's changes commit in the order of their numbers and a
 *   reader that has seen `seq` n will never later find a smaller one appear (SQLite has one writer).
 *   `pruned_seq` is the highest number retention has removed: a feed cursor below it has missed
 *   changes (410).
 * - `revision` counts the changes of one record; `record_json` is the record as the API returned
 *   it after the change (for a delete, as it was before).
 * - `actor_*` say who made it; `client_id` is the OAuth application.
 * - Two indexes besides the key, since each one is a page more to write with every change: a
 *   record's revisions, and an actor's changes (undo). Retention finds its cut by `seq`, along
 *   the key, since changes are numbered in the order of their times.
 *
 * Records that exist already get one `create` change each, made by `system`, so the log starts
 * complete: a client can sync from the start of the feed and every record has a revision to go
 * back to.
 */
export async function up(db: Kysely<unknown>, _dialect: DialectName): Promise<void> {
  await sql`create table change_counters (
    site_id integer primary key references sites(id) on delete cascade,
    last_seq integer not null default 0,
    pruned_seq integer not null default 0)`.execute(db);
  await sql`create table content_changes (
    site_id integer not null references sites(id) on delete cascade,
    seq integer not null,
    type text not null,
    record_id integer not null,
    op text not null,
    at text not null,
    revision integer not null,
    actor_kind text not null,
    actor_id text not null,
    actor_name text not null,
    client_id text,
    record_json text not null,
    primary key (site_id, seq))`.execute(db);
  await sql`create unique index content_changes_record on content_changes (site_id, type, record_id, revision)`.execute(db);
  await sql`create index content_changes_actor on content_changes (site_id, actor_id, seq)`.execute(db);

  const existing = sql`select site_id, 'page' as type, page as record_id, record_json from pages
    union all
    select site_id, 'blog' as type, info_id as record_id, record_json from blogs`;
  // Dated now, when the log learned of them: changes are numbered in the order of their times.
  const at = formatTimestamp(new Date());
  await sql`insert into content_changes (site_id, seq, type, record_id, op, at, revision, actor_kind, actor_id, actor_name, record_json)
    select site_id, row_number() over (partition by site_id order by type desc, record_id), type, record_id, 'create',
      cast(${at} as text), 1, 'system', 'system', 'existing content', record_json
    from (${existing}) as records`.execute(db);
  await sql`insert into change_counters (site_id, last_seq)
    select id, coalesce((select max(seq) from content_changes c where c.site_id = sites.id), 0) from sites`.execute(db);
}
