import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * The owner console: an OAuth client registered there belongs to the user who
 * registered it, who alone sees, edits and deletes it. Clients of the CLI and of dynamic
 * registration have no owner (null).
 */
export async function up(db: Kysely<unknown>, _dialect: DialectName): Promise<void> {
  await sql`alter table oauth_clients add column owner_user_id integer references users(id) on delete cascade`.execute(db);
  await sql`create index oauth_clients_owner on oauth_clients (owner_user_id)`.execute(db);
}
