import { type Kysely, sql } from 'kysely';
import { CHANGES_CHANNEL } from '../change-source.js';
import type { DialectName } from '../database.js';

/**
 * PostgreSQL: every node caches the principals that credentials and access tokens proved
 * (PrincipalCache in auth/principal-cache.ts) and drops them when the database notifies it on CHANGES_CHANNEL. These triggers send that
 * notification whenever a change that decides whether one is live commits, from whichever node or
 * tool made it (PostgreSQL sends it at commit, once per transaction and table). A credential's
 * revocation, key or website; an access token's row; a connection's status, website, grant, or an
 * expiry brought forward; any deletion, cascades included. The last-use times that every node
 * touches send nothing. SQLite has no notifications: it asks `pragma data_version`.
 * Migration 0012 replaces these triggers with ones generated from ACCESS_TABLES (change-source.ts).
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`
    create function cms_notify_change() returns trigger language plpgsql as $$
    begin
      perform pg_notify(${sql.lit(CHANGES_CHANNEL)}, tg_table_name);
      return null;
    end $$`.execute(db);
  const triggers = [
    sql`create trigger api_credentials_deleted after delete on api_credentials for each row execute function cms_notify_change()`,
    sql`create trigger api_credentials_changed after update on api_credentials for each row
      when (old.revoked_at is distinct from new.revoked_at or old.key_hash is distinct from new.key_hash
        or old.site_id is distinct from new.site_id or old.api_id is distinct from new.api_id)
      execute function cms_notify_change()`,
    sql`create trigger oauth_payloads_deleted after delete on oauth_payloads for each row
      when (old.model = 'AccessToken') execute function cms_notify_change()`,
    sql`create trigger oauth_payloads_changed after update on oauth_payloads for each row
      when (old.model = 'AccessToken' or new.model = 'AccessToken') execute function cms_notify_change()`,
    sql`create trigger oauth_connections_deleted after delete on oauth_connections for each row execute function cms_notify_change()`,
    sql`create trigger oauth_connections_changed after update on oauth_connections for each row
      when (old.status is distinct from new.status or old.site_id is distinct from new.site_id
        or old.grant_id is distinct from new.grant_id or new.expires_at < old.expires_at)
      execute function cms_notify_change()`,
  ];
  for (const trigger of triggers) await trigger.execute(db);
}
