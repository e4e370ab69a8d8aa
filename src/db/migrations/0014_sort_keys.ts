import { type Kysely, type RawBuilder, sql } from 'kysely';
import { blogSortKeys } from '../../content/blogs/blog.record.js';
import { pageSortKeys } from '../../content/pages/page.record.js';
import type { DialectName } from '../database.js';

/**
 * The sort keys of title and menu-text order (`sortKey`: lower case, accents folded, cut short)
 * and one index per list order a client can ask for, so that every order is read from an index
 * in order, by offset or by cursor, never sorted (docs/api.md, "Order"). The order `order` keeps
 * its index (pages_site_order, blogs_site_order).
 *
 * On PostgreSQL the keys compare in the `C` collation, by code point as SQLite compares them, so
 * both databases list titles in one order. The indexes come before the keys are filled in: the
 * fill's writes then need no `set constraints all immediate` before any DDL (0010).
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const key = sql.raw(dialect === 'postgres' ? `text collate "C" not null default ''` : `text not null default ''`);
  await sql`alter table pages add column title_sort_key ${key}`.execute(db);
  await sql`alter table pages add column menutext_sort_key ${key}`.execute(db);
  await sql`alter table blogs add column title_sort_key ${key}`.execute(db);
  for (const statement of INDEXES) await sql.raw(statement).execute(db);
  await fillSortKeys(db);
}

/** One index per order of a list; a blog's `created` order is its `id` order, read from blogs_site_id (docs/api.md). */
const INDEXES = [
  'create index pages_site_title on pages (site_id, title_sort_key, page)',
  'create index pages_site_menutext on pages (site_id, menutext_sort_key, page)',
  'create index pages_site_created on pages (site_id, page_dt_begin, page)',
  'create index pages_site_updated on pages (site_id, page_lastmodified, page)',
  'create index pages_site_id on pages (site_id, page)',
  'create index blogs_site_title on blogs (site_id, title_sort_key, info_id)',
  'create index blogs_site_date on blogs (site_id, info_date, info_id)',
  'create index blogs_site_updated on blogs (site_id, info_timestamp, info_id)',
  'create index blogs_site_id on blogs (site_id, info_id)',
];

interface Target {
  table: string;
  key: string;
  inputs: readonly string[];
  keys(row: Record<string, string>): Record<string, string>;
}

/** The input columns as they are on the day this was written; the rule is the service's own. */
const TARGETS: readonly Target[] = [
  {
    table: 'pages',
    key: 'page',
    inputs: ['page_usertitle', 'page_menuname'],
    keys: (row) => pageSortKeys(row as { page_usertitle: string; page_menuname: string }),
  },
  { table: 'blogs', key: 'info_id', inputs: ['info_title'], keys: (row) => blogSortKeys(row as { info_title: string }) },
];

/**
 * Walks each table by primary key, `batchSize` rows at a time (a large table is never held in
 * memory), and writes each batch's keys in one statement per key column. Exported for its test,
 * which makes the batches small.
 */
export async function fillSortKeys(db: Kysely<unknown>, batchSize = 500): Promise<void> {
  for (const target of TARGETS) {
    const id = sql.ref(target.key);
    const table = sql.table(target.table);
    for (let after = 0; ; ) {
      const { rows } = await sql<
        Record<string, string> & { id: number }
      >`select ${id} as id, ${sql.join(target.inputs.map((c) => sql.ref(c)))}
        from ${table} where ${id} > ${after} order by ${id} limit ${batchSize}`.execute(db);
      if (rows.length > 0) {
        const keyed = rows.map((row) => ({ id: row.id, keys: target.keys(row) }));
        const columns = Object.keys(keyed[0]!.keys).map((column) => {
          const value: RawBuilder<string> = sql`case ${id} ${sql.join(
            keyed.map((r) => sql`when ${r.id} then ${r.keys[column]}`),
            sql` `,
          )} end`;
          return sql`${sql.ref(column)} = ${value}`;
        });
        await sql`update ${table} set ${sql.join(columns)} where ${id} in (${sql.join(keyed.map((r) => r.id))})`.execute(db);
      }
      const last = rows.at(-1);
      if (!last || rows.length < batchSize) break;
      after = last.id;
    }
  }
}
