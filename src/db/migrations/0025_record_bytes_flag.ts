import { type Kysely, sql } from 'kysely';

const TABLES = ['pages', 'blogs'];

/**
 * Whether a page's or blog's stored text holds anything outside ASCII (1) or not (0). SQLite
 * reads such a text as its UTF-8 bytes, which go out as they are: decoding it into a JavaScript
 * string and encoding it back for the socket cost several times the read (bench/README.md). A
 * row the flag misses is read as text, as before, so the flag only ever chooses the faster way.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    await sql`alter table ${sql.table(table)} add column record_non_ascii integer not null default 0`.execute(db);
  }
  await markNonAscii(db);
}

/** Sets the flag on every row whose text has more bytes than characters: one outside ASCII. */
export async function markNonAscii(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    await sql`update ${sql.table(table)} set record_non_ascii = 1 where octet_length(record_json) <> length(record_json)`.execute(db);
  }
}
