/**
 * Undo of one application: what its connections changed since a time, taken back record by
 * record (docs/history.md, "Undo one application"). It reads the change log, and writes through
 * the page and blog services' restore and delete, so the undo's own changes are logged like any.
 */
import type { DbHandle } from '../../db/schema.js';
import { inTransaction } from '../../db/transaction.js';
import { AppError, NotFoundError } from '../../errors.js';
import type { BlogRecord } from '../blogs/blog.record.js';
import { BLOGS } from '../blogs/blog.repository.js';
import { restoreBlog } from '../blogs/blog.restore.js';
import { deleteBlog } from '../blogs/blog.service.js';
import type { PageRecord } from '../pages/page.record.js';
import { lockPageTree, PAGES } from '../pages/page.repository.js';
import { deletePage, restorePage } from '../pages/page.service.js';
import { lockImageReferences } from '../shared/image-references.js';
import { findRow } from '../shared/stored-records.js';
import type { Actor, ActorRef, RecordType } from './change-log.js';
import {
  type ChangeEntry,
  changesByConnections,
  connectionSiteOf,
  type Revision,
  recordsChangedBy,
  revisionsFrom,
} from './history.repository.js';
import type { HistoryDeps } from './revisions.service.js';

/** Whose changes an undo takes back: the connections of one application (or one connection). */
export interface UndoScope {
  readonly siteId: number;
  readonly connectionIds: readonly string[];
  /** `YYYY-MM-DD HH:MM:SS`, UTC: changes at or after it are undone. */
  readonly since: string;
}

interface UndoneRecord {
  readonly type: RecordType;
  readonly id: number;
}

/** A record left as it is, and why; `by` and `at` name the other writer's change that stands in the way. */
interface SkippedRecord extends UndoneRecord {
  readonly reason: string;
  readonly by?: Actor;
  readonly at?: string;
}

/** Every record the application changed in the window, each in exactly one list. */
export interface UndoResult {
  readonly restored: UndoneRecord[];
  readonly deleted: UndoneRecord[];
  /** Already as it would be without the application's changes (taken back before, or changed back). */
  readonly unchanged: UndoneRecord[];
  readonly skipped: SkippedRecord[];
}

/** What a record goes back to: a revision's content, or not existing. */
type Target = { recordJson: string } | 'absent';

/** A record to take back, planned from its revision `expected`: written only while that is still its latest. */
interface Step extends UndoneRecord {
  target: Target;
  expected: number;
}

/** The fields a write stamps with its own time: two states of a record that differ only there are the same content. */
const STAMPED: Record<RecordType, string> = { page: 'page_lastmodified', blog: 'info_timestamp' };

const actorOf = (r: Revision): Actor => ({ kind: r.actor_kind as Actor['kind'], id: r.actor_id, name: r.actor_name });
const changedBy = (r: Revision) => `changed afterwards by ${r.actor_name} (${r.actor_kind}) at ${r.at} UTC`;

/** Whether the state after revision `r` (absent after a delete) is `target`, stamps aside. */
function isAt(type: RecordType, r: Revision | undefined, target: Target): boolean {
  const absent = r === undefined || r.op === 'delete';
  if (target === 'absent' || absent) return target === 'absent' && absent;
  const content = (json: string) => {
    const { [STAMPED[type]]: _stamp, ...rest } = JSON.parse(json) as Record<string, unknown>;
    return JSON.stringify(rest);
  };
  return content(r.record_json) === content(target.recordJson);
}

/** The state before revision `r`: the revision before it, or nothing when `r` created the record. */
function before(revisions: readonly Revision[], index: number): Target | undefined {
  if (index > 0) {
    const previous = revisions[index - 1]!;
    return previous.op === 'delete' ? 'absent' : { recordJson: previous.record_json };
  }
  return revisions[0]!.revision === 1 ? 'absent' : undefined;
}

/** The website an OAuth connection is for; a 404 when there is no such connection. */
export async function connectionSite(db: DbHandle, connectionId: string): Promise<number> {
  const site = await connectionSiteOf(db, connectionId);
  if (site === undefined) throw new NotFoundError(`There is no OAuth connection ${connectionId}.`);
  return site;
}

/** The changes one application (its connections) made, newest first, at most `limit`: what an undo would take back. */
export async function changesBy(
  db: DbHandle,
  siteId: number,
  connectionIds: readonly string[],
  since: string | undefined,
  limit = 200,
): Promise<ChangeEntry[]> {
  if (connectionIds.length === 0) return [];
  return changesByConnections(db, siteId, connectionIds, since, limit);
}

/**
 * Takes back what the connections changed since `since`. The rule, per record: it returns to how
 * it would be had the application not written since then, wherever that discards no other
 * writer's change made after the application's.
 * - The application's changes at the end of the record's history (after everybody else's) are
 *   taken back: the record returns to the revision just before them, which is another writer's,
 *   or from before `since`. A record the application created is deleted; one it deleted comes back.
 * - When another writer changed the record after the application's last change, taking it back
 *   would discard that change: the record is left, and listed with that writer and time, unless it
 *   is already as it was before the application's changes (an earlier undo, say).
 * Each record is written in its own transaction, under the locks every write of it takes, and
 * only while its latest revision is still the one the plan was made from: a record changed
 * meanwhile is skipped and named, never overwritten. Steps are retried while they make progress,
 * so a page comes back before the sub pages and blogs that need it, and sub pages and blogs are
 * deleted before the page that holds them.
 */
export async function undoChanges(deps: HistoryDeps, scope: UndoScope, actor: ActorRef): Promise<UndoResult> {
  const result: UndoResult = { restored: [], deleted: [], unchanged: [], skipped: [] };
  if (scope.connectionIds.length === 0) return result;
  const theirs = (r: Revision) =>
    ['oauth', 'mcp'].includes(r.actor_kind) && scope.connectionIds.includes(r.actor_id) && r.at >= scope.since;
  const touched = await recordsChangedBy(deps.db, scope.siteId, scope.connectionIds, scope.since);
  let steps: Step[] = [];
  for (const { type, record_id: id } of touched) {
    const revisions = await revisionsFrom(deps.db, scope.siteId, type, id);
    const latest = revisions.at(-1)!;
    // The application's changes after everybody else's, at the end of the history.
    let start = revisions.length;
    while (start > 0 && theirs(revisions[start - 1]!)) start--;
    if (start === revisions.length) {
      // Another writer came after the application: what it wrote stands on the application's changes.
      const first = revisions.findIndex(theirs);
      const after = revisions[revisions.findLastIndex(theirs) + 1]!;
      const original = before(revisions, first);
      if (original !== undefined && isAt(type, latest, original)) result.unchanged.push({ type, id });
      else result.skipped.push({ type, id, reason: changedBy(after), by: actorOf(after), at: after.at });
      continue;
    }
    const target = before(revisions, start);
    if (target === undefined) {
      result.skipped.push({ type, id, reason: `its revision from before the change is no longer kept (HISTORY_DAYS)` });
      continue;
    }
    if (isAt(type, latest, target)) result.unchanged.push({ type, id });
    else steps.push({ type, id, target, expected: latest.revision });
  }
  // Until a round makes no progress: what one step needs, another may provide.
  for (let progress = true; progress && steps.length > 0; ) {
    progress = false;
    const failed: { step: Step; reason: string }[] = [];
    for (const step of steps) {
      try {
        const done = await takeBack(deps, scope.siteId, step, actor);
        if (done === 'restored') result.restored.push({ type: step.type, id: step.id });
        else if (done === 'deleted') result.deleted.push({ type: step.type, id: step.id });
        else result.skipped.push({ type: step.type, id: step.id, reason: changedBy(done), by: actorOf(done), at: done.at });
        progress = true;
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        failed.push({ step, reason: error.message });
      }
    }
    steps = failed.map((f) => f.step);
    if (!progress || steps.length === 0) {
      for (const f of failed) result.skipped.push({ type: f.step.type, id: f.step.id, reason: f.reason });
    }
  }
  return result;
}

/**
 * One step, in one transaction: the locks a write of the record takes, in their order (images,
 * the page tree, the row), then its latest revision, which must still be the planned one; then the
 * restore or delete, which joins the transaction. The change that came in between when it is not.
 */
function takeBack(deps: HistoryDeps, siteId: number, step: Step, actor: ActorRef): Promise<'restored' | 'deleted' | Revision> {
  return inTransaction(deps.db, async (tx) => {
    await lockImageReferences(tx, 'shared');
    if (step.type === 'page') await lockPageTree(tx, siteId);
    if (step.type === 'page') await findRow(tx, PAGES, siteId, step.id, true);
    else await findRow(tx, BLOGS, siteId, step.id, true);
    const meanwhile = await revisionsFrom(tx, siteId, step.type, step.id, step.expected + 1);
    if (meanwhile.length > 0) return meanwhile[0]!;
    if (step.target === 'absent') {
      try {
        if (step.type === 'page') await deletePage(tx, deps.changeLog, siteId, step.id, actor);
        else await deleteBlog({ ...deps, db: tx }, siteId, step.id, actor);
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
      }
      return 'deleted';
    }
    const record = JSON.parse(step.target.recordJson) as PageRecord & BlogRecord;
    if (step.type === 'page') await restorePage(tx, deps.changeLog, siteId, step.id, record, actor);
    else await restoreBlog(tx, deps.changeLog, siteId, step.id, record, actor);
    return 'restored';
  });
}
