/**
 * The last steps of every write of a stored record (pages, blogs), in its transaction: the record
 * stored again from the row's columns, the change appended to the change log, and its webhook
 * deliveries queued through the log's outbox. Each step is named in the function that takes it.
 */
import { sql } from 'kysely';
import type { DbHandle } from '../../db/schema.js';
import { inTransaction } from '../../db/transaction.js';
import type { Precondition } from '../../http/representation.js';
import type { ActorRef, ChangeLog, ChangeOp } from '../history/change-log.js';
import { lockImageReferences } from './image-references.js';
import { nonAscii, storedRecord } from './stored.js';
import { findRow } from './stored-records.js';
import type { AnyResource } from './stored-resource.js';

/**
 * Writes the stored record and the sort keys that the row's columns give (after every write, in
 * its transaction), so no write path can leave a record listed at a stale place.
 */
async function writeStored(
  db: DbHandle,
  r: AnyResource,
  siteId: number,
  id: number,
  stored: Record<string, string | number>,
): Promise<void> {
  await db
    .updateTable(r.table)
    .set(stored as never)
    .where('site_id', '=', siteId)
    .where(sql.ref(r.id), '=', id)
    .execute();
}

async function deleteRow(db: DbHandle, r: AnyResource, siteId: number, id: number): Promise<void> {
  await db.deleteFrom(r.table).where('site_id', '=', siteId).where(sql.ref(r.id), '=', id).execute();
}

/**
 * The last step of every write that changes the row, in its transaction: the stored record is
 * rebuilt from the row's columns as they now are, so it cannot differ from what building the
 * record from them gives.
 */
async function storeRecord<R>(
  db: DbHandle,
  r: AnyResource<unknown, R>,
  siteId: number,
  id: number,
): Promise<{ record: R; etag: string; recordJson: string }> {
  const row = await findRow(db, r, siteId, id);
  if (!row) throw new Error(`${r.noun} ${id} vanished inside its own write`);
  const record = r.toRecord(row);
  const stored = storedRecord(record as object);
  await writeStored(db, r, siteId, id, { ...stored, record_non_ascii: nonAscii(stored.record_json), ...r.sortKeys(row) });
  return { record, etag: stored.etag, recordJson: stored.record_json };
}

/**
 * The last steps of every write that keeps the record: the record stored from the row's columns
 * (storeRecord), then the change appended to the change log with the record as the API returns it,
 * and its webhook deliveries queued (ChangeLog.appendAndQueue), all in the write's transaction.
 */
export async function storeLogAndQueue<R>(
  db: DbHandle,
  changeLog: ChangeLog,
  r: AnyResource<unknown, R>,
  siteId: number,
  id: number,
  op: Exclude<ChangeOp, 'delete'>,
  actor: ActorRef,
): Promise<{ record: R; etag: string }> {
  const { record, etag, recordJson } = await storeRecord(db, r, siteId, id);
  await changeLog.appendAndQueue(db, { siteId, type: r.noun, id, op, actor, recordJson });
  return { record, etag };
}

/**
 * A revision restored as the record's current content, under its id, in one transaction: the
 * image lock (the sweep must not remove a file the revision shows), the current row locked and
 * held to the precondition, then `write` puts the revision's columns in place (an update, or an
 * insert when the record is deleted), and the record is stored, the change logged with op
 * `restore` and its deliveries queued (storeLogAndQueue). `created` says which it was: a deleted
 * record comes back as a 201.
 */
export async function restoreLogAndQueue<Row, R>(
  db: DbHandle,
  changeLog: ChangeLog,
  r: AnyResource<Row, R>,
  siteId: number,
  id: number,
  actor: ActorRef,
  precondition: Precondition | undefined,
  write: (tx: DbHandle, current: (Row & { etag: string }) | undefined) => Promise<void>,
): Promise<{ record: R; etag: string; created: boolean }> {
  return inTransaction(db, async (tx) => {
    await lockImageReferences(tx, 'shared');
    const current = await findRow(tx, r, siteId, id, true);
    precondition?.(current?.etag);
    await write(tx, current);
    return { ...(await storeLogAndQueue(tx, changeLog, r, siteId, id, 'restore', actor)), created: !current };
  });
}

/**
 * Deletes a record found for the write (findForWrite), then appends the change to the change log
 * with the record as it was and queues its deliveries (ChangeLog.appendAndQueue).
 */
export async function deleteLogAndQueue<Row>(
  db: DbHandle,
  changeLog: ChangeLog,
  r: AnyResource<Row>,
  siteId: number,
  id: number,
  row: Row,
  actor: ActorRef,
): Promise<void> {
  await deleteRow(db, r, siteId, id);
  const { record_json } = storedRecord(r.toRecord(row) as object);
  await changeLog.appendAndQueue(db, { siteId, type: r.noun, id, op: 'delete', actor, recordJson: record_json });
}
