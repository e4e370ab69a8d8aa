import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Images kept in the database (IMAGE_STORAGE=database; src/storage/image.table.ts describes the
 * tables). Created on every deployment, used only by that driver, so switching needs no migration.
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const bytes = dialect === 'postgres' ? sql`bytea` : sql`blob`;
  await sql`create table images (
    token text primary key,
    name text unique,
    mime text,
    bytes integer not null default 0,
    created_at text not null,
    committed_at text)`.execute(db);
  await sql`create index images_committed on images (committed_at)`.execute(db);
  await sql`create table image_chunks (
    token text not null references images(token) on delete cascade,
    seq integer not null,
    data ${bytes} not null,
    primary key (token, seq))`.execute(db);
}
