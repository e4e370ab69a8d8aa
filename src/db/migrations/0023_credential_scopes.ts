import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * An API credential may be limited to some scopes, stored space-separated as a token's are. Null:
 * the credential carries everything:write, as every credential did and as the hosted platform's
 * keys do, so the credentials made before keep working unchanged.
 */
export async function up(db: Kysely<unknown>, _dialect: DialectName): Promise<void> {
  await sql`alter table api_credentials add column scopes text`.execute(db);
}
