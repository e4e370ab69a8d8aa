import { type Kysely, sql } from 'kysely';

/**
 * The website that uploaded each stored image (docs/blogs.md, Images): an image is removed once
 * no record of that website refers to it, so another website's record cannot keep it. One row per
 * image, under the image's own name; its thumbnail goes with it (mainNameOf).
 *
 * `site_id` has no foreign key on purpose: a deleted website's images must go with it, and a
 * cascade would delete the row and leave the image under the rule for images of no known website
 * (any website's record keeps it). Site ids are never given out again (autoincrement, serial), so
 * a row outliving its website names no other website; the next sweep removes its image.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table image_owners (
    name text primary key,
    site_id integer not null)`.execute(db);
  await fillOwners(db);
}

/**
 * Images stored before: the website whose blog_images rows name them. A path the rows of more
 * than one website name (possible only in data written outside the service) gets no owner, so it
 * keeps the rule of any website's record, as before.
 */
export async function fillOwners(db: Kysely<unknown>): Promise<void> {
  await sql`insert into image_owners (name, site_id)
    select substr(path, ${sql.lit('/images/'.length + 1)}), min(site_id) from blog_images
    where path like '/images/%'
    group by path
    having count(distinct site_id) = 1`.execute(db);
}
