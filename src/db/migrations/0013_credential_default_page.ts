import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * An API credential may name its website's default page: where a blog posted without `page` goes,
 * as on the hosted platform, whose API ID names "the default page for data creation". Null: none,
 * and such a blog is a 400. Not a foreign key: a page may be deleted while a credential names it,
 * and the blog posted then is refused, naming the page that is gone.
 */
export async function up(db: Kysely<unknown>, _dialect: DialectName): Promise<void> {
  await sql`alter table api_credentials add column default_page integer`.execute(db);
}
