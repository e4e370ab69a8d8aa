/**
 * The change log's SQL: appending a change under the website's counter, and reading the log back
 * for the feed, the revisions, undo and retention. Named for what each statement does; the rules
 * (what a cursor may be, what undo takes back, what retention keeps) are in the services beside it.
 */
import { type SqlBool, sql } from 'kysely';
import type { DbHandle } from '../../db/schema.js';
import { now } from '../../db/time.js';
import type { ContentChangesTable } from './history.table.js';

export type RecordType = ContentChangesTable['type'];
export type ChangeOp = ContentChangesTable['op'];

/** An actor as the log keeps it and the API shows it. */
export interface Actor {
  readonly kind: 'api-key' | 'oauth' | 'mcp' | 'console' | 'cli' | 'system';
  readonly id: string;
  readonly name: string;
}

/** One entry of the feed, as the API shows it. */
export interface ChangeEntry {
  readonly seq: number;
  readonly type: RecordType;
  readonly id: number;
  readonly op: ChangeOp;
  readonly at: string;
  readonly actor: Actor;
  readonly revision: number;
}

type EntryRow = Pick<
  ContentChangesTable,
  'seq' | 'type' | 'record_id' | 'op' | 'at' | 'revision' | 'actor_kind' | 'actor_id' | 'actor_name'
>;

const ENTRY_COLUMNS = ['seq', 'type', 'record_id', 'op', 'at', 'revision', 'actor_kind', 'actor_id', 'actor_name'] as const;

function entryOf(row: EntryRow): ChangeEntry {
  return {
    seq: row.seq,
    type: row.type,
    id: row.record_id,
    op: row.op,
    at: row.at,
    actor: { kind: row.actor_kind as Actor['kind'], id: row.actor_id, name: row.actor_name },
    revision: row.revision,
  };
}

// Appending.

/** An API credential's label, as the log names it at the time of the change. */
export async function credentialLabel(db: DbHandle, apiId: string): Promise<string | undefined> {
  const row = await db.selectFrom('api_credentials').select('label').where('api_id', '=', apiId).executeTakeFirst();
  return row?.label;
}

/** The OAuth application behind a connection: its client id and name. */
export function connectionClient(db: DbHandle, connectionId: string): Promise<{ client_id: string; name: string } | undefined> {
  return db
    .selectFrom('oauth_connections')
    .innerJoin('oauth_clients', 'oauth_clients.client_id', 'oauth_connections.client_id')
    .select(['oauth_clients.client_id', 'oauth_clients.name'])
    .where('oauth_connections.id', '=', connectionId)
    .executeTakeFirst();
}

/**
 * Takes the website's next change number. The counter row exists after its first change: an
 * update by key, or the insert that makes it. On PostgreSQL the row stays locked until the commit.
 */
export async function takeChangeNumber(db: DbHandle, siteId: number): Promise<number> {
  const counted =
    (await db
      .updateTable('change_counters')
      .set({ last_seq: sql`last_seq + 1` })
      .where('site_id', '=', siteId)
      .returning('last_seq')
      .executeTakeFirst()) ??
    (await db
      .insertInto('change_counters')
      .values({ site_id: siteId, last_seq: 1, pruned_seq: 0 })
      .onConflict((oc) => oc.column('site_id').doUpdateSet({ last_seq: sql`change_counters.last_seq + 1` }))
      .returning('last_seq')
      .executeTakeFirstOrThrow());
  return counted.last_seq;
}

/** The number the record's next revision takes: one past its last, 1 for its first. */
export async function nextRevision(db: DbHandle, siteId: number, type: RecordType, id: number): Promise<number> {
  const last = await db
    .selectFrom('content_changes')
    .select((eb) => eb.fn.max('revision').as('revision'))
    .where('site_id', '=', siteId)
    .where('type', '=', type)
    .where('record_id', '=', id)
    .executeTakeFirst();
  return Number(last?.revision ?? 0) + 1;
}

export async function insertChange(db: DbHandle, row: Omit<ContentChangesTable, 'at'>): Promise<void> {
  await db
    .insertInto('content_changes')
    .values({ ...row, at: now() })
    .execute();
}

// Reading.

/** A website's last change number, and the highest that retention removed. */
export async function counterOf(db: DbHandle, siteId: number): Promise<{ last: number; pruned: number }> {
  const row = await db.selectFrom('change_counters').select(['last_seq', 'pruned_seq']).where('site_id', '=', siteId).executeTakeFirst();
  return { last: row?.last_seq ?? 0, pruned: row?.pruned_seq ?? 0 };
}

/** Up to `limit` of the website's changes numbered after `from` and up to `upTo`, oldest first, of one type or record when asked. */
export async function changesBetween(
  db: DbHandle,
  siteId: number,
  range: { from: number; upTo: number; type?: RecordType | undefined; id?: number | undefined; limit: number },
): Promise<ChangeEntry[]> {
  let select = db
    .selectFrom('content_changes')
    .select(ENTRY_COLUMNS)
    .where('site_id', '=', siteId)
    .where('seq', '>', range.from)
    .where('seq', '<=', range.upTo);
  if (range.type !== undefined) select = select.where('type', '=', range.type);
  if (range.id !== undefined) select = select.where('record_id', '=', range.id);
  return (await select.orderBy('seq').limit(range.limit).execute()).map(entryOf);
}

/** A record's changes, newest first. */
export async function changesOfRecord(db: DbHandle, siteId: number, type: RecordType, id: number): Promise<ChangeEntry[]> {
  const rows = await db
    .selectFrom('content_changes')
    .select(ENTRY_COLUMNS)
    .where('site_id', '=', siteId)
    .where('type', '=', type)
    .where('record_id', '=', id)
    .orderBy('revision', 'desc')
    .execute();
  return rows.map(entryOf);
}

/** The record's JSON text as revision `revision` left it. */
export async function revisionText(
  db: DbHandle,
  siteId: number,
  type: RecordType,
  id: number,
  revision: number,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('content_changes')
    .select('record_json')
    .where('site_id', '=', siteId)
    .where('type', '=', type)
    .where('record_id', '=', id)
    .where('revision', '=', revision)
    .executeTakeFirst();
  return row?.record_json;
}

/** The website an OAuth connection is for. */
export async function connectionSiteOf(db: DbHandle, connectionId: string): Promise<number | undefined> {
  const row = await db.selectFrom('oauth_connections').select('site_id').where('id', '=', connectionId).executeTakeFirst();
  return row?.site_id;
}

/** The changes the connections made (as `oauth` or `mcp`) at or after `since`, newest first, at most `limit`. */
export async function changesByConnections(
  db: DbHandle,
  siteId: number,
  connectionIds: readonly string[],
  since: string | undefined,
  limit: number,
): Promise<ChangeEntry[]> {
  let select = db
    .selectFrom('content_changes')
    .select(ENTRY_COLUMNS)
    .where('site_id', '=', siteId)
    .where('actor_kind', 'in', ['oauth', 'mcp'])
    .where('actor_id', 'in', [...connectionIds]);
  if (since !== undefined) select = select.where('at', '>=', since);
  return (await select.orderBy('seq', 'desc').limit(limit).execute()).map(entryOf);
}

/** The records the connections changed at or after `since`, in the order of their first such change. */
export function recordsChangedBy(
  db: DbHandle,
  siteId: number,
  connectionIds: readonly string[],
  since: string,
): Promise<{ type: RecordType; record_id: number }[]> {
  return db
    .selectFrom('content_changes')
    .select(['type', 'record_id'])
    .where('site_id', '=', siteId)
    .where('actor_kind', 'in', ['oauth', 'mcp'])
    .where('actor_id', 'in', [...connectionIds])
    .where('at', '>=', since)
    .groupBy(['type', 'record_id'])
    .orderBy((eb) => eb.fn.min('seq'))
    .execute();
}

/** One revision of a record, with who made it and the record as it left it. */
export type Revision = Pick<ContentChangesTable, 'revision' | 'op' | 'at' | 'actor_kind' | 'actor_id' | 'actor_name' | 'record_json'>;

/** A record's revisions from number `from` on, oldest first. */
export function revisionsFrom(db: DbHandle, siteId: number, type: RecordType, id: number, from = 0): Promise<Revision[]> {
  return db
    .selectFrom('content_changes')
    .select(['revision', 'op', 'at', 'actor_kind', 'actor_id', 'actor_name', 'record_json'])
    .where('site_id', '=', siteId)
    .where('type', '=', type)
    .where('record_id', '=', id)
    .where('revision', '>=', from)
    .orderBy('revision')
    .execute();
}

// Retention.

export function changeCounters(db: DbHandle): Promise<{ site_id: number; last_seq: number; pruned_seq: number }[]> {
  return db.selectFrom('change_counters').select(['site_id', 'last_seq', 'pruned_seq']).execute();
}

/** The website's first change numbered `seq` or later, and its time. */
export function firstChangeFrom(db: DbHandle, siteId: number, seq: number): Promise<{ seq: number; at: string } | undefined> {
  return db
    .selectFrom('content_changes')
    .select(['seq', 'at'])
    .where('site_id', '=', siteId)
    .where('seq', '>=', seq)
    .orderBy('seq')
    .limit(1)
    .executeTakeFirst();
}

/** A later revision of the same record exists. */
function newer(alias: 'content_changes' | 'gone') {
  const of = (column: string) => sql.ref(`${alias}.${column}`);
  return sql<SqlBool>`exists (select 1 from content_changes newer where newer.site_id = ${of('site_id')}
    and newer.type = ${of('type')} and newer.record_id = ${of('record_id')} and newer.revision > ${of('revision')})`;
}

/** Removes the website's changes up to `seq` that a later revision of their record supersedes; returns how many. */
export async function removeSuperseded(db: DbHandle, siteId: number, seq: number): Promise<number> {
  const result = await db
    .deleteFrom('content_changes')
    .where('site_id', '=', siteId)
    .where('seq', '<=', seq)
    .where(newer('content_changes'))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Removes the deletes up to `seq` that are the last revision of their record; returns how many. */
export async function removeLastDeletes(db: DbHandle, siteId: number, seq: number): Promise<number> {
  const result = await db
    .deleteFrom('content_changes as gone')
    .where('gone.site_id', '=', siteId)
    .where('gone.seq', '<=', seq)
    .where('gone.op', '=', 'delete')
    .where(sql<SqlBool>`not ${newer('gone')}`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function setPrunedNumber(db: DbHandle, siteId: number, seq: number): Promise<void> {
  await db.updateTable('change_counters').set({ pruned_seq: seq }).where('site_id', '=', siteId).execute();
}
