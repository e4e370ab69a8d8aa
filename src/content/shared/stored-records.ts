/**
 * One record of a resource with stored records (pages, blogs), by id: as stored (the GET by id),
 * as an object, or locked for a write with its preconditions checked. The resource's description
 * is stored-resource.ts; lists are stored-lists.ts; a write's last steps stored-writes.ts.
 */

import { sql } from 'kysely';
import { dialectOf } from '../../db/database.js';
import { preparedLookup } from '../../db/prepared-lookup.js';
import type { DbHandle } from '../../db/schema.js';
import { NotFoundError } from '../../errors.js';
import type { Precondition } from '../../http/representation.js';
import { andThen, type MaybePromise } from '../../maybe-async.js';
import { type StoredRecord, textOf } from './stored.js';
import { type AnyResource, selected } from './stored-resource.js';

/** One record's stored text and ETag, outside a transaction: the hottest read, a prepared statement on SQLite. */
function readStored(db: DbHandle, r: AnyResource, siteId: number, id: number): MaybePromise<StoredRecord | undefined> {
  return preparedLookup(db, r.storedById, { siteId, id });
}

/**
 * A record's columns and its stored ETag (for If-Match). `lock` takes a row lock so a check and
 * the write after it see the same row (PostgreSQL; SQLite writes are serial already).
 */
export async function findRow<Row>(
  db: DbHandle,
  r: AnyResource<Row>,
  siteId: number,
  id: number,
  lock = false,
): Promise<(Row & { etag: string }) | undefined> {
  const query = db
    .selectFrom(r.table)
    .select(selected(db, [...r.columns, 'etag']))
    .where('site_id', '=', siteId)
    .where(sql.ref(r.id), '=', id);
  return (await (lock && dialectOf(db) === 'postgres' ? query.forUpdate() : query).executeTakeFirst()) as
    | (Row & { etag: string })
    | undefined;
}

function notFound(r: AnyResource, id: number): NotFoundError {
  return new NotFoundError(`There is no ${r.noun} ${id} on this website.`);
}

/** One record as stored: its JSON text and ETag; at once when the read is (preparedLookup). */
export function getStored(db: DbHandle, r: AnyResource, siteId: number, id: number): MaybePromise<StoredRecord> {
  return andThen(readStored(db, r, siteId, id), (stored) => {
    if (!stored) throw notFound(r, id);
    return stored;
  });
}

/** One record as an object (MCP, the console): the stored text, parsed. */
export async function getRecord<R>(db: DbHandle, r: AnyResource<unknown, R>, siteId: number, id: number): Promise<R> {
  return JSON.parse(textOf((await getStored(db, r, siteId, id)).record_json)) as R;
}

/**
 * The row a write or delete starts from, locked (findRow): a 404 when the website has no such
 * record, and the request's If-Match checked against its stored ETag.
 */
export async function findForWrite<Row>(
  db: DbHandle,
  r: AnyResource<Row>,
  siteId: number,
  id: number,
  precondition: Precondition | undefined,
): Promise<Row & { etag: string }> {
  const row = await findRow(db, r, siteId, id, true);
  if (!row) throw notFound(r, id);
  precondition?.(row.etag);
  return row;
}
