import { type Kysely, sql } from 'kysely';

/**
 * The read scopes of the credential a webhook sends under, space-separated: a hook made with a
 * limited credential is sent only the events of what that credential may read. Null: every event,
 * for the hooks made before, in the console or with the CLI, and with a credential that reads all.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table webhooks add column read_scopes text`.execute(db);
}
