import { type Kysely, sql } from 'kysely';
import { ACCESS_TABLES, accessTriggers } from '../change-source.js';
import type { DialectName } from '../database.js';

/** The triggers 0009 wrote by hand, before they were generated from one list. */
const HAND_WRITTEN = [
  ['api_credentials_deleted', 'api_credentials'],
  ['api_credentials_changed', 'api_credentials'],
  ['oauth_payloads_deleted', 'oauth_payloads'],
  ['oauth_payloads_changed', 'oauth_payloads'],
  ['oauth_connections_deleted', 'oauth_connections'],
  ['oauth_connections_changed', 'oauth_connections'],
] as const;

/**
 * PostgreSQL: the notifications that tell every node a row deciding access changed, generated
 * from ACCESS_TABLES, the list the SQLite statement check reads too, so the two cannot disagree.
 * Besides what 0009 covered, deletions of clients, websites, users and memberships now notify
 * directly rather than only through the rows they cascade to.
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  if (dialect !== 'postgres') return;
  for (const [trigger, table] of HAND_WRITTEN) await sql.raw(`drop trigger if exists ${trigger} on ${table}`).execute(db);
  await accessTriggers(db, ACCESS_TABLES);
}
