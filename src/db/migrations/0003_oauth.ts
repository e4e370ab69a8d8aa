import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

/** The OAuth authorization server's tables (src/oauth/oauth.tables.ts describes them). */
export async function up(db: Kysely<unknown>, _dialect: DialectName): Promise<void> {
  await sql`create table oauth_clients (
    client_id text primary key,
    name text not null,
    redirect_uris text not null,
    application_type text not null default 'web',
    source text not null default 'cli',
    metadata text not null default '{}',
    created_at text not null)`.execute(db);

  await sql`create table oauth_connections (
    id text primary key,
    grant_id text not null unique,
    user_id integer not null references users(id) on delete cascade,
    client_id text not null references oauth_clients(client_id) on delete cascade,
    site_id integer not null references sites(id) on delete cascade,
    scopes text not null,
    status text not null default 'active',
    created_at text not null,
    last_used_at text,
    expires_at text not null,
    revoked_at text)`.execute(db);
  await sql`create index oauth_connections_site on oauth_connections (site_id, created_at)`.execute(db);

  await sql`create table oauth_payloads (
    model text not null,
    id text not null,
    payload text not null,
    grant_id text,
    uid text,
    expires_at text,
    consumed_at text,
    primary key (model, id))`.execute(db);
  await sql`create index oauth_payloads_grant on oauth_payloads (grant_id)`.execute(db);
  await sql`create index oauth_payloads_uid on oauth_payloads (model, uid)`.execute(db);
  await sql`create index oauth_payloads_expires on oauth_payloads (expires_at)`.execute(db);

  await sql`create table rate_limits (
    key text primary key,
    count integer not null,
    reset_at text not null)`.execute(db);
}
