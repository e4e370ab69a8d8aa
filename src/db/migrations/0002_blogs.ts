import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen, like 0001: the blog columns as they were on the day this was written.
const BLOG_COLUMNS: ReadonlyArray<[string, 'int' | 'text', string?]> = [
  ['info_title', 'text'],
  ['info_fulltext', 'text'],
  ['info_summary', 'text'],
  ['info_metatitle', 'text'],
  ['info_filename', 'text'],
  ['info_tags', 'text'],
  ['info_show', 'text', 'Y'],
  ['info_hideuntil', 'text'],
  ['info_date', 'text'],
  ['info_timestamp', 'text'],
  ['info_order', 'int'],
  ['info_img', 'text'],
  ['info_img_json', 'text'],
  ['info_more_images', 'text', '[]'],
  ['info_object', 'text'],
  ['info_blog_comments_on', 'int'],
  ['info_comment_count', 'int'],
  ['info_authorid', 'int'],
  ['info_location', 'text'],
  ['info_url', 'text'],
  ['info_linktext', 'text'],
  ['info_linkrel', 'text'],
  ['info_email', 'text'],
  ['info_enquiryform', 'text'],
  ['info_enquiry_config', 'text'],
  ['info_leadmagnet_followup', 'text'],
  ['info_leadmagnet_config', 'text'],
  ['info_duplicationid', 'int'],
  ['info_category1', 'int'],
  ['info_category2', 'int'],
  ['info_category3', 'int'],
  ['info_blogcnt', 'int'],
  ['info_re', 'text'],
  ['info_groupid', 'int'],
  ['site_search_keywords', 'text'],
  ['site_search_keywords_updated', 'text'],
  ['cid', 'int'],
];

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const serial = dialect === 'postgres' ? sql`info_id serial primary key` : sql`info_id integer primary key autoincrement`;
  const columns = BLOG_COLUMNS.map(([name, type, fallback]) =>
    type === 'int'
      ? sql`${sql.id(name)} integer not null default 0`
      : sql`${sql.id(name)} text not null default ${sql.lit(fallback ?? '')}`,
  );
  // `page` has no cascade: a page holding blogs cannot be deleted (the service answers 409 first).
  await sql`create table blogs (
    ${serial},
    site_id integer not null references sites(id) on delete cascade,
    page integer not null references pages(page),
    ${sql.join(columns)},
    search_text text not null default '')`.execute(db);
  await sql`create unique index blogs_site_filename on blogs (site_id, info_filename)`.execute(db);
  await sql`create index blogs_site_page on blogs (site_id, page)`.execute(db);
  await sql`create index blogs_site_order on blogs (site_id, info_order, info_date desc, info_id)`.execute(db);

  await sql`create table blog_images (
    site_id integer not null references sites(id) on delete cascade,
    info_id integer not null references blogs(info_id) on delete cascade,
    role text not null,
    path text not null,
    original_name text not null,
    sha256 text not null,
    bytes integer not null,
    width integer not null,
    height integer not null,
    type text not null,
    primary key (info_id, path))`.execute(db);
  await sql`create index blog_images_path on blog_images (path)`.execute(db);

  if (dialect === 'postgres') {
    await sql`alter table blogs add column search_tsv tsvector generated always as (to_tsvector('simple', search_text)) stored`.execute(db);
    await sql`create index blogs_search on blogs using gin (search_tsv)`.execute(db);
  } else {
    await sql`create virtual table blogs_fts using fts5(search_text, content='blogs', content_rowid='info_id', tokenize='unicode61 remove_diacritics 2')`.execute(
      db,
    );
    await sql`create trigger blogs_fts_insert after insert on blogs begin
      insert into blogs_fts(rowid, search_text) values (new.info_id, new.search_text); end`.execute(db);
    await sql`create trigger blogs_fts_delete after delete on blogs begin
      insert into blogs_fts(blogs_fts, rowid, search_text) values ('delete', old.info_id, old.search_text); end`.execute(db);
    await sql`create trigger blogs_fts_update after update of search_text on blogs begin
      insert into blogs_fts(blogs_fts, rowid, search_text) values ('delete', old.info_id, old.search_text);
      insert into blogs_fts(rowid, search_text) values (new.info_id, new.search_text); end`.execute(db);
  }
}
