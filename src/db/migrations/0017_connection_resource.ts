import { createHash } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

/** Connections whose grant is read per statement: a bound list stays well below either database's parameter limit. */
const BATCH = 500;

/**
 * Connections record the resource their grant is for (the REST API at {base_url} or the MCP
 * server at {base_url}/mcp), so the console can tell the two apart without reading grants. A
 * connection whose grant still exists takes it from the Grant's payload; one that has ended lost
 * its grant with its tokens, and keeps null.
 *
 * New connections now start 'pending' and become active with their first token. One stored
 * before that, never used and holding no token, is an authorization whose code was never
 * exchanged: it becomes pending too, so it stops showing as a connected application, and the
 * hourly clean-up removes it.
 */
export async function up(db: Kysely<unknown>, _dialect: DialectName): Promise<void> {
  await sql`alter table oauth_connections add column resource text`.execute(db);
  await fillResources(db);
  await markUnexchanged(db);
}

/** Active connections that were never used and hold no token become pending. */
export async function markUnexchanged(db: Kysely<unknown>): Promise<void> {
  await sql`update oauth_connections set status = 'pending'
    where status = 'active' and last_used_at is null
      and not exists (select 1 from oauth_payloads
        where oauth_payloads.grant_id = oauth_connections.grant_id and oauth_payloads.model in ('AccessToken', 'RefreshToken'))`.execute(
    db,
  );
}

/** A Grant's row is keyed by the SHA-256 of the grant id (base64url), as the OAuth adapter stores it. */
function grantKey(grantId: string): string {
  return createHash('sha256').update(grantId).digest('base64url');
}

/** The one resource a grant holds (a grant here is for one resource), if its payload names one. */
function resourceOf(payload: string): string | null {
  const resources = (JSON.parse(payload) as { resources?: Record<string, unknown> }).resources;
  return Object.keys(resources ?? {})[0] ?? null;
}

/** Each connection without a resource takes its grant's, `batch` connections at a time. */
export async function fillResources(db: Kysely<unknown>, batch = BATCH): Promise<void> {
  let after = '';
  for (;;) {
    const { rows } = await sql<{ id: string; grant_id: string }>`select id, grant_id from oauth_connections
      where resource is null and id > ${after} order by id limit ${batch}`.execute(db);
    if (!rows.length) return;
    after = rows.at(-1)!.id;
    const byKey = new Map(rows.map((row) => [grantKey(row.grant_id), row.id]));
    const { rows: grants } = await sql<{ id: string; payload: string }>`select id, payload from oauth_payloads
      where model = 'Grant' and id in (${sql.join([...byKey.keys()])})`.execute(db);
    for (const grant of grants) {
      const resource = resourceOf(grant.payload);
      if (resource) await sql`update oauth_connections set resource = ${resource} where id = ${byKey.get(grant.id)}`.execute(db);
    }
  }
}
