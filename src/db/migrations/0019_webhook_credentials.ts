import { type Kysely, sql } from 'kysely';

/**
 * The API credential or OAuth connection a webhook sends under: the one that created it, or last
 * enabled it (docs/webhooks.md). A hook stops once that credential ends, as every other use of the
 * credential does. Hooks made before, and those made in the console or with the CLI, have none and
 * send for as long as the website has them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table webhooks add column credential_kind text`.execute(db);
  await sql`alter table webhooks add column credential_id text`.execute(db);
}
