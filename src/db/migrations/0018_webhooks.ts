import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Webhooks (docs/webhooks.md): the hooks each website registers, the outbox of deliveries and the
 * log of their attempts.
 *
 * - `webhook_deliveries` is the outbox: one row per change and matching active hook, inserted in the
 *   change's own transaction (the change log's outbox), so a committed change always has its deliveries and a
 *   rolled-back one never does. `due_ms` (milliseconds since the epoch: retries are seconds apart
 *   and the worker polls many times a second, finer than the stored times' second) is when a
 *   pending row may next be claimed; claiming moves it a lease ahead, so a node that dies mid-attempt
 *   leaves the row to be claimed again once the lease ends.
 * - The partial index holds only pending rows: the worker's poll reads the due ones from it however
 *   many delivered rows the table keeps.
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const serial = (name: string) =>
    dialect === 'postgres' ? sql`${sql.id(name)} serial primary key` : sql`${sql.id(name)} integer primary key autoincrement`;
  await sql`create table webhooks (
    ${serial('id')},
    site_id integer not null references sites(id) on delete cascade,
    url text not null,
    events text not null,
    description text not null default '',
    status text not null default 'active',
    disabled_reason text,
    secret text not null,
    previous_secret text,
    previous_secret_until text,
    failing_since text,
    created_at text not null)`.execute(db);
  await sql`create index webhooks_site on webhooks (site_id, status)`.execute(db);
  await sql`create table webhook_deliveries (
    ${serial('id')},
    webhook_id integer not null references webhooks(id) on delete cascade,
    site_id integer not null,
    message_id text not null,
    event text not null,
    payload text not null,
    state text not null default 'pending',
    due_ms bigint not null,
    step integer not null default 0,
    attempts integer not null default 0,
    claimed_by text,
    created_at text not null)`.execute(db);
  await sql`create index webhook_deliveries_due on webhook_deliveries (due_ms) where state = 'pending'`.execute(db);
  await sql`create index webhook_deliveries_hook on webhook_deliveries (webhook_id, id)`.execute(db);
  await sql`create index webhook_deliveries_created on webhook_deliveries (created_at)`.execute(db);
  await sql`create table webhook_attempts (
    ${serial('id')},
    delivery_id integer not null references webhook_deliveries(id) on delete cascade,
    attempt integer not null,
    status_code integer,
    error text,
    duration_ms integer not null,
    at text not null)`.execute(db);
  await sql`create index webhook_attempts_delivery on webhook_attempts (delivery_id, attempt)`.execute(db);
}
