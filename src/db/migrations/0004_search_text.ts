import { type Kysely, type RawBuilder, sql } from 'kysely';
import { blogSearchText, pageSearchText } from '../../content/shared/search-text.js';
import type { DialectName } from '../database.js';

/**
 * Rebuilds every page's and blog's `search_text` with today's rules (HTML character references
 * decoded in full; before this, `Caf&eacute;` was indexed as `Caf eacute`). Updating the column
 * is enough: on SQLite the FTS tables follow it through their update triggers (0001, 0002), on
 * PostgreSQL `search_tsv` is generated from it.
 *
 * The input columns are spelled out as they are on the day this was written, like every
 * migration's; the rules applied to them are the service's own, so the stored text is exactly what
 * a fresh write would store.
 */
export async function up(db: Kysely<unknown>, _dialect: DialectName): Promise<void> {
  await rebuildSearchText(db);
}

const PAGE_INPUTS = [
  'page_usertitle',
  'page_menuname',
  'page_metatitle',
  'page_summary',
  'page_keywords',
  'page_html_intro',
  'page_html_content',
] as const;
const BLOG_INPUTS = ['info_title', 'info_metatitle', 'info_summary', 'info_tags', 'info_fulltext'] as const;

/** Exported for its test, which makes the batches small. */
export async function rebuildSearchText(db: Kysely<unknown>, batchSize = 500): Promise<void> {
  await rebuildTable(db, { table: 'pages', key: 'page', inputs: PAGE_INPUTS, text: pageSearchText }, batchSize);
  await rebuildTable(db, { table: 'blogs', key: 'info_id', inputs: BLOG_INPUTS, text: blogSearchText }, batchSize);
}

interface Target<F extends string> {
  table: string;
  key: string;
  inputs: readonly F[];
  text(row: Record<F, string>): string;
}

type Row<F extends string> = Record<F, string> & { id: number; search_text: string };

/**
 * Walks the table by primary key, `batchSize` rows at a time, so a large table is never held in
 * memory, and writes each batch's changed rows in one statement (one commit per batch on SQLite,
 * where migrations run outside a transaction).
 */
async function rebuildTable<F extends string>(db: Kysely<unknown>, target: Target<F>, batchSize: number): Promise<void> {
  const key = sql.ref(target.key);
  const table = sql.table(target.table);
  const columns = sql.join(target.inputs.map((c) => sql.ref(c)));
  for (let after = 0; ; ) {
    const { rows } = await sql<Row<F>>`select ${key} as id, search_text, ${columns} from ${table}
      where ${key} > ${after} order by ${key} limit ${batchSize}`.execute(db);
    const changed = rows.map((row) => ({ id: row.id, old: row.search_text, text: target.text(row) })).filter((r) => r.text !== r.old);
    if (changed.length > 0) {
      const byKey = (value: (r: (typeof changed)[number]) => string): RawBuilder<string> =>
        sql`case ${key} ${sql.join(
          changed.map((r) => sql`when ${r.id} then ${value(r)}`),
          sql` `,
        )} end`;
      // A row whose search_text changed since it was read was rewritten by the service meanwhile,
      // with fields this batch has not seen: it is left as that write made it.
      await sql`update ${table} set search_text = ${byKey((r) => r.text)}
        where ${key} in (${sql.join(changed.map((r) => r.id))}) and search_text = ${byKey((r) => r.old)}`.execute(db);
    }
    const last = rows.at(-1);
    if (!last || rows.length < batchSize) return;
    after = last.id;
  }
}
