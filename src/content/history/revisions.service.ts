/**
 * A record's revisions: listing them, reading one, and restoring one as the record's current
 * content through the page and blog services, so that the restore is stored, logged and delivered
 * like any write.
 */
import type { DbHandle } from '../../db/schema.js';
import { NotFoundError } from '../../errors.js';
import type { Precondition } from '../../http/representation.js';
import type { ImageStorage } from '../../storage/image-storage.js';
import type { BlogRecord } from '../blogs/blog.record.js';
import { restoreBlog } from '../blogs/blog.restore.js';
import type { PageRecord } from '../pages/page.record.js';
import { restorePage } from '../pages/page.service.js';
import type { Saved } from '../shared/envelope.js';
import type { ActorRef, ChangeLog, RecordType } from './change-log.js';
import { type ChangeEntry, changesOfRecord, revisionText } from './history.repository.js';

/** What restoring and undoing need: the database, the change log the writes append to, and the images a deleted blog frees. */
export interface HistoryDeps {
  readonly db: DbHandle;
  readonly changeLog: ChangeLog;
  readonly images: ImageStorage;
}

/** A record's revisions, newest first. A 404 when the website has no trace of it. */
export async function listRevisions(db: DbHandle, siteId: number, type: RecordType, id: number): Promise<ChangeEntry[]> {
  const entries = await changesOfRecord(db, siteId, type, id);
  if (entries.length === 0) throw new NotFoundError(`There is no ${type} ${id} on this website, nor any history of one.`);
  return entries;
}

/** Revision `revision` of a record: the record's JSON text as it then was. */
export async function getRevision(db: DbHandle, siteId: number, type: RecordType, id: number, revision: number): Promise<string> {
  const text = await revisionText(db, siteId, type, id, revision);
  if (text === undefined)
    throw new NotFoundError(
      `The ${type} ${id} of this website has no revision ${revision}: GET /api/${type}/${id}/revisions lists those it has.`,
    );
  return text;
}

/** POST …/revisions/<n>/restore: makes revision `revision` the record's content, as a new revision. */
export async function restoreRevision(
  db: DbHandle,
  changeLog: ChangeLog,
  siteId: number,
  type: RecordType,
  id: number,
  revision: number,
  actor: ActorRef,
  precondition?: Precondition,
): Promise<Saved<PageRecord | BlogRecord>> {
  const recordJson = await getRevision(db, siteId, type, id, revision);
  return type === 'page'
    ? restorePage(db, changeLog, siteId, id, JSON.parse(recordJson) as PageRecord, actor, precondition)
    : restoreBlog(db, changeLog, siteId, id, JSON.parse(recordJson) as BlogRecord, actor, precondition);
}
