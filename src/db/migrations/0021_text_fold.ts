import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * `cms_fold(text)` on PostgreSQL: the text filters' folding (db/text-fold.ts), lower case with the
 * combining diacritical marks removed. Immutable, so the planner inlines it. SQLite has it as a
 * function registered on each connection, not in the file.
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql
    .raw(
      String.raw`create or replace function cms_fold(t text) returns text language sql immutable strict parallel safe
        as $$ select lower(regexp_replace(normalize(t, NFD), '[\u0300-\u036f]', '', 'g')) $$`,
    )
    .execute(db);
}
