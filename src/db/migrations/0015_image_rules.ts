import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Images follow their page's rules (docs/images.md). blog_images records each stored image's
 * thumbnail size (0 × 0: none) and the rules it was made under (`rules`, '' for an image stored
 * before rules applied), so `cms images reprocess` knows which images today's rules would change.
 * image_variants keeps the sizes and formats made on request, for the database storage driver
 * (src/storage/image.table.ts).
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  await sql`alter table blog_images add column thumb_width integer not null default 0`.execute(db);
  await sql`alter table blog_images add column thumb_height integer not null default 0`.execute(db);
  await sql`alter table blog_images add column rules text not null default ''`.execute(db);
  const bytes = dialect === 'postgres' ? sql`bytea` : sql`blob`;
  await sql`create table image_variants (
    name text not null,
    variant text not null,
    data ${bytes} not null,
    bytes integer not null,
    used_at text not null,
    primary key (name, variant))`.execute(db);
}
