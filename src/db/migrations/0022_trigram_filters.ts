import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Trigram indexes for the text filters (`title`, `menutext`, `filename`, `tags`), so that a
 * `contains`, `endsWith` or leading-`%` pattern reads the rows that hold its text instead of every
 * row of the website. Each indexes the folded text (`cms_fold`, db/text-fold.ts) the filters
 * compare; the exact LIKE still decides (content/shared/filters.ts).
 *
 * - SQLite: a contentless FTS5 table per resource with the trigram tokenizer, case-sensitive since
 *   its text is folded already, kept in step by triggers on every insert, delete and update of an
 *   indexed column, whoever writes (the service, restore, undo, the CLI, a seeder).
 * - PostgreSQL: a GIN index of `pg_trgm` on each folded column. The extension is created when the
 *   migrating user may (`ensureTrigramIndexes`); when it may not, the migration goes on without the
 *   indexes, each start logs that the filters scan, and a start after an administrator created the
 *   extension builds them.
 *
 * The columns are spelled out as they are on the day this was written, like every migration's.
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  if (dialect === 'postgres') {
    await ensureTrigramIndexes(db);
    return;
  }
  for (const { table, key, columns } of TRIGRAM_TABLES) await sqliteTrigramTable(db, table, key, columns);
}

const TRIGRAM_TABLES = [
  { table: 'pages', key: 'page', columns: ['page_usertitle', 'page_menuname', 'page_alias', 'page_keywords'] },
  { table: 'blogs', key: 'info_id', columns: ['info_title', 'info_filename', 'info_tags'] },
] as const;

async function sqliteTrigramTable(db: Kysely<unknown>, table: string, key: string, columns: readonly string[]): Promise<void> {
  const trgm = `${table}_trgm`;
  const names = sql.join(columns.map((c) => sql.ref(c)));
  const folded = (row: 'new' | 'old') => sql.join(columns.map((c) => sql`cms_fold(${sql.raw(`${row}.${c}`)})`));
  await sql`create virtual table ${sql.table(trgm)} using fts5(${names}, content='', contentless_delete=1,
    tokenize='trigram case_sensitive 1')`.execute(db);
  await sql`insert into ${sql.table(trgm)} (rowid, ${names})
    select ${sql.ref(key)}, ${sql.join(columns.map((c) => sql`cms_fold(${sql.ref(c)})`))} from ${sql.table(table)}`.execute(db);
  const insertNew = sql`insert into ${sql.table(trgm)} (rowid, ${names}) values (${sql.raw(`new.${key}`)}, ${folded('new')});`;
  const deleteOld = sql`delete from ${sql.table(trgm)} where rowid = ${sql.raw(`old.${key}`)};`;
  await sql`create trigger ${sql.id(`${trgm}_insert`)} after insert on ${sql.table(table)} begin ${insertNew} end`.execute(db);
  await sql`create trigger ${sql.id(`${trgm}_delete`)} after delete on ${sql.table(table)} begin ${deleteOld} end`.execute(db);
  await sql`create trigger ${sql.id(`${trgm}_update`)} after update of ${sql.join([sql.ref(key), names])} on ${sql.table(table)}
    begin ${deleteOld} ${insertNew} end`.execute(db);
}

/**
 * PostgreSQL: creates `pg_trgm` (in schema `public`, which every schema of the database can use:
 * an extension exists once per database) when it is missing and the user may, then the GIN
 * indexes that are missing. Returns whether the indexes are there; when they are not, the text
 * filters scan, as they did before. Run by the migration and at each start, so that an extension
 * an administrator created later is used without a migration of its own.
 */
export async function ensureTrigramIndexes<DB>(db: Kysely<DB>): Promise<boolean> {
  // A DO block with an exception handler: a refusal rolls back only its own subtransaction, not
  // the migration's transaction around it.
  await sql`do $$ begin
      if not exists (select 1 from pg_extension where extname = 'pg_trgm') then
        begin
          create extension pg_trgm schema public;
        exception when others then
          raise notice 'pg_trgm cannot be created here: %', sqlerrm;
        end;
      end if;
    end $$`.execute(db);
  const { rows } = await sql<{ schema: string }>`select extnamespace::regnamespace::text as schema
    from pg_extension where extname = 'pg_trgm'`.execute(db);
  const schema = rows[0]?.schema;
  if (schema === undefined) return false;
  for (const { table, columns } of TRIGRAM_TABLES) {
    for (const column of columns) {
      const name = `${table}_trgm_${column}`;
      // Looked up first: a create that finds the index still waits for the table's lock.
      const { rows: found } = await sql`select 1 from pg_class where oid = to_regclass(${name})`.execute(db);
      if (found.length > 0) continue;
      await sql`create index if not exists ${sql.id(name)} on ${sql.table(table)}
        using gin (cms_fold(${sql.ref(column)}) ${sql.id(schema, 'gin_trgm_ops')})`.execute(db);
    }
  }
  return true;
}
