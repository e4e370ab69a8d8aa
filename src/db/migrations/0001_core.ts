import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

// Frozen: a migration describes the schema as it was on the day it was written. Later changes go
// into new migrations, so the column list is spelled out here rather than taken from page.fields.ts.
const PAGE_COLUMNS: ReadonlyArray<[string, 'int' | 'text']> = [
  ['page_usertitle', 'text'],
  ['page_menuname', 'text'],
  ['page_alias', 'text'],
  ['page_parent', 'int'],
  ['page_order', 'int'],
  ['page_issubmenu', 'int'],
  ['page_html_content', 'text'],
  ['page_html_intro', 'text'],
  ['page_html_footer', 'text'],
  ['page_html_zone2', 'text'],
  ['page_html_scripts', 'text'],
  ['page_summary', 'text'],
  ['page_metatitle', 'text'],
  ['page_keywords', 'text'],
  ['page_dt_begin', 'text'],
  ['page_lastmodified', 'text'],
  ['wgt_id', 'int'],
  ['page_privacy', 'int'],
  ['page_privacy_groupid', 'int'],
  ['page_addmembergroupname', 'text'],
  ['page_windowsize', 'int'],
  ['page_sorting', 'text'],
  ['page_summary_text_length', 'int'],
  ['page_target', 'text'],
  ['page_css', 'text'],
  ['page_bg', 'text'],
  ['page_banner', 'text'],
  ['page_banner_title', 'text'],
  ['page_banner_url', 'text'],
  ['page_titleimg', 'text'],
  ['page_menuimg', 'text'],
  ['page_ogimage', 'text'],
  ['page_submenu_desc', 'text'],
  ['page_submenu_img', 'text'],
  ['page_alturl', 'text'],
  ['page_alturlsub', 'text'],
  ['page_more_info_label', 'text'],
  ['page_accesskey', 'text'],
  ['page_alttemplate', 'text'],
  ['page_reference_code', 'text'],
  ['page_duplicationid', 'int'],
  ['page_crop_width', 'int'],
  ['page_crop_height', 'int'],
  ['page_crop_aspect', 'int'],
  ['page_crop_aspect_thumbs', 'int'],
  ['page_thumb_dimensions', 'text'],
  ['page_json_schema', 'text'],
  ['page_json_config', 'text'],
  ['page_notify', 'text'],
  ['page_notify_subject', 'text'],
  ['page_replyaddress', 'text'],
  ['page_autorespond_subject', 'text'],
  ['page_enquiryform_heading', 'text'],
  ['page_addressautocomplete', 'text'],
  ['page_forum_service', 'text'],
  ['page_social_sharing', 'text'],
  ['page_recapture', 'text'],
];

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const serial = (name: string) =>
    dialect === 'postgres' ? sql`${sql.id(name)} serial primary key` : sql`${sql.id(name)} integer primary key autoincrement`;

  await sql`create table sites (${serial('id')}, name text not null, created_at text not null)`.execute(db);
  await sql`create table users (${serial('id')}, email text not null unique, password_hash text not null, created_at text not null)`.execute(
    db,
  );
  await sql`create table site_users (
    site_id integer not null references sites(id) on delete cascade,
    user_id integer not null references users(id) on delete cascade,
    role text not null,
    primary key (site_id, user_id))`.execute(db);
  await sql`create table api_credentials (
    api_id text primary key,
    site_id integer not null references sites(id) on delete cascade,
    label text not null,
    key_hash text not null,
    created_at text not null,
    last_used_at text,
    revoked_at text)`.execute(db);
  await sql`create index api_credentials_site on api_credentials (site_id)`.execute(db);

  const columns = PAGE_COLUMNS.map(([name, type]) =>
    type === 'int' ? sql`${sql.id(name)} integer not null default 0` : sql`${sql.id(name)} text not null default ''`,
  );
  await sql`create table pages (
    ${serial('page')},
    site_id integer not null references sites(id) on delete cascade,
    ${sql.join(columns)},
    search_text text not null default '')`.execute(db);
  await sql`create unique index pages_site_alias on pages (site_id, page_alias)`.execute(db);
  await sql`create index pages_site_order on pages (site_id, page_order, page)`.execute(db);
  await sql`create index pages_site_parent on pages (site_id, page_parent)`.execute(db);

  if (dialect === 'postgres') {
    // 'simple' keeps words as written (no stemming), the same as SQLite's unicode61 tokenizer.
    await sql`alter table pages add column search_tsv tsvector generated always as (to_tsvector('simple', search_text)) stored`.execute(db);
    await sql`create index pages_search on pages using gin (search_tsv)`.execute(db);
  } else {
    await sql`create virtual table pages_fts using fts5(search_text, content='pages', content_rowid='page', tokenize='unicode61 remove_diacritics 2')`.execute(
      db,
    );
    await sql`create trigger pages_fts_insert after insert on pages begin
      insert into pages_fts(rowid, search_text) values (new.page, new.search_text); end`.execute(db);
    await sql`create trigger pages_fts_delete after delete on pages begin
      insert into pages_fts(pages_fts, rowid, search_text) values ('delete', old.page, old.search_text); end`.execute(db);
    await sql`create trigger pages_fts_update after update of search_text on pages begin
      insert into pages_fts(pages_fts, rowid, search_text) values ('delete', old.page, old.search_text);
      insert into pages_fts(rowid, search_text) values (new.page, new.search_text); end`.execute(db);
  }
}
