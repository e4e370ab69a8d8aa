import { type Kysely, type RawBuilder, sql } from 'kysely';
import { BLOGS } from '../../content/blogs/blog.repository.js';
import { PAGES } from '../../content/pages/page.repository.js';
import { storedRecord } from '../../content/shared/stored.js';
import type { DialectName } from '../database.js';

/**
 * Every page and blog keeps its record's JSON text and strong ETag beside its columns
 * (`record_json`, `etag`), so a GET sends stored text instead of building and serializing the
 * record, and its ETag is not a hash of the body. The services write both with every change, in
 * the same transaction; this fills them for the rows that exist.
 *
 * The records are built by the services' own builders (page.record.ts, blog.record.ts), so the
 * stored text is exactly what a fresh write stores. A later migration that changes what a record
 * holds (a column added to a catalogue, a value converted) must call `rebuildStoredRecords` after
 * its own change: rows are read whole (`select *`), so this one also runs on a database that does
 * not have that later column yet, and the later migration brings the text up to date.
 */
export async function up(db: Kysely<unknown>, _dialect: DialectName): Promise<void> {
  for (const table of ['pages', 'blogs']) {
    await sql`alter table ${sql.table(table)} add column record_json text not null default ''`.execute(db);
    await sql`alter table ${sql.table(table)} add column etag text not null default ''`.execute(db);
  }
  await rebuildStoredRecords(db);
}

/** The resources with stored records, as their repositories describe them: table, id column, record builder. */
type Target = Pick<typeof PAGES | typeof BLOGS, 'table' | 'id'> & { toRecord(row: never): object };
const TARGETS: readonly Target[] = [PAGES, BLOGS];

/**
 * Exported for later migrations, for `cms records rebuild` (after a rolling upgrade, docs/deploy.md)
 * and for the test, which makes the batches small. Returns how many rows it rewrote.
 */
export async function rebuildStoredRecords(db: Kysely<unknown>, batchSize = 1000): Promise<number> {
  let rewritten = 0;
  for (const target of TARGETS) rewritten += await rebuildTable(db, target, batchSize);
  return rewritten;
}

/**
 * Walks the table by primary key, `batchSize` rows at a time, so a large table is never held in
 * memory, and writes each batch's changed rows in one statement (one commit per batch on SQLite,
 * where migrations run outside a transaction). Running it again changes nothing.
 */
async function rebuildTable(db: Kysely<unknown>, target: Target, batchSize: number): Promise<number> {
  const key = sql.ref(target.id);
  const table = sql.table(target.table);
  let rewritten = 0;
  for (let after = 0; ; ) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${table}
      where ${key} > ${after} order by ${key} limit ${batchSize}`.execute(db);
    const stale = rows
      .map((row) => ({
        id: Number(row[target.id]),
        old: row.etag as string,
        oldJson: row.record_json,
        ...storedRecord(target.toRecord(row as never)),
      }))
      .filter((r) => r.etag !== r.old || r.record_json !== r.oldJson);
    if (stale.length > 0) {
      const byKey = (value: (r: (typeof stale)[number]) => string): RawBuilder<string> =>
        sql`case ${key} ${sql.join(
          stale.map((r) => sql`when ${r.id} then ${value(r)}`),
          sql` `,
        )} end`;
      // A row whose etag changed since it was read was rewritten by the service meanwhile (which
      // stores its own record): it is left as that write made it.
      const result = await sql`update ${table} set record_json = ${byKey((r) => r.record_json)}, etag = ${byKey((r) => r.etag)}
        where ${key} in (${sql.join(stale.map((r) => r.id))}) and etag = ${byKey((r) => r.old)}`.execute(db);
      rewritten += Number(result.numAffectedRows ?? 0);
    }
    const last = rows.at(-1);
    if (!last || rows.length < batchSize) return rewritten;
    after = Number(last[target.id]);
  }
}
