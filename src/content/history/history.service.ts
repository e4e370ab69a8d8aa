/**
 * What the change log answers: the feed of a website's changes, a record's revisions, restoring
 * one, undoing what one application did, and retention. Everything here reads the log that the
 * page and blog services write (change-log.ts).
 */
import { type SqlBool, sql } from 'kysely';
import type { DbHandle } from '../../db/schema.js';
import { formatTimestamp } from '../../db/time.js';
import { inTransaction } from '../../db/transaction.js';
import { CursorExpiredError, NotFoundError, ValidationError } from '../../errors.js';
import type { Precondition } from '../../http/representation.js';
import type { ImageStorage } from '../../storage/image-storage.js';
import type { BlogRecord } from '../blogs/blog.record.js';
import { restoreBlog } from '../blogs/blog.service.js';
import { removeOrphanImages } from '../blogs/image-cleanup.js';
import type { PageRecord } from '../pages/page.record.js';
import { restorePage } from '../pages/page.service.js';
import { keysetCursor } from '../shared/cursor.js';
import type { Saved } from '../shared/envelope.js';
import type { Actor, ActorRef, ChangeOp, RecordType } from './change-log.js';
import { FeedWatch } from './feed-watch.js';

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

/**
 * Feed cursors: the website and the number of the last change a client has seen. Opaque to
 * clients; the website is in it so that a cursor of one website's feed is refused by another's,
 * whose numbers mean something else.
 */
const FEED_CURSOR = keysetCursor('c', ['int', 'int']);

/** The cursor that follows change `seq` of website `siteId`. */
export function feedCursor(siteId: number, seq: number): string {
  return FEED_CURSOR.encode([siteId, seq]);
}

const notOurs = (message: string) => new ValidationError([{ field: 'since', message }]);

/**
 * The change number a `since` cursor names (0 for an empty one: the start); a 400 naming `since`
 * when it is no cursor of this website's feed.
 */
export function sinceOf(cursor: string | undefined, siteId: number): number | null {
  if (cursor === undefined) return null;
  let key: readonly [number, number] | null;
  try {
    key = FEED_CURSOR.decode(cursor);
  } catch (error) {
    if (error instanceof ValidationError) throw notOurs('is not a cursor of the change feed: send meta.nextCursor as it was given');
    throw error;
  }
  if (key === null) return 0;
  const [site, seq] = key;
  if (site !== siteId)
    throw notOurs(
      "is a cursor of another website's change feed: send a meta.nextCursor this website's feed gave, or leave since out to start",
    );
  if (seq < 0) throw notOurs('is not a cursor of the change feed: send meta.nextCursor as it was given');
  return seq;
}

export interface FeedQuery {
  readonly since: number | null;
  readonly type?: RecordType | undefined;
  readonly id?: number | undefined;
  readonly pageSize: number;
}

type ChangeRow = {
  seq: number;
  type: RecordType;
  record_id: number;
  op: ChangeOp;
  at: string;
  revision: number;
  actor_kind: string;
  actor_id: string;
  actor_name: string;
};

const ENTRY_COLUMNS = ['seq', 'type', 'record_id', 'op', 'at', 'revision', 'actor_kind', 'actor_id', 'actor_name'] as const;

function entryOf(row: ChangeRow): ChangeEntry {
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

/** A website's last change number, and the highest that retention removed. */
async function counterOf(db: DbHandle, siteId: number): Promise<{ last: number; pruned: number }> {
  const row = await db.selectFrom('change_counters').select(['last_seq', 'pruned_seq']).where('site_id', '=', siteId).executeTakeFirst();
  return { last: row?.last_seq ?? 0, pruned: row?.pruned_seq ?? 0 };
}

/**
 * A 410 for a cursor ahead of the website's last change. The feed never hands one out, so the
 * database has lost changes the client saw (restored from an earlier copy, or a failover to a
 * replica that had not received them): following it would silently skip the changes made since,
 * under numbers the client has passed.
 */
function expireAhead(since: number | null, last: number): void {
  if (since !== null && since > last) {
    throw new CursorExpiredError(
      `This cursor is ahead of the change feed: it follows change ${since}, and the website's last change is ${last}. The database no longer has changes this cursor saw (restored from an earlier copy, or failed over): read the records again in full, then follow the feed from a cursor of GET /api/changes without since.`,
    );
  }
}

/** A 410 for a cursor below the highest change retention removed: following it would miss changes. */
function expireBelow(since: number | null, pruned: number): void {
  if (since !== null && since < pruned) {
    throw new CursorExpiredError(
      `The changes after this cursor are older than the history kept (HISTORY_DAYS): read the records again in full, then follow the feed from a cursor of GET /api/changes without since.`,
    );
  }
}

/**
 * One page of the feed after `since`, oldest first, and the cursor to ask from next. The counter
 * is read first: every change numbered up to it has committed (change-log.ts), so when the page is
 * not full, the next cursor can stand at the counter, past changes the filter left out, and
 * nothing committed later can appear below it.
 */
async function feedPage(db: DbHandle, siteId: number, query: FeedQuery): Promise<{ entries: ChangeEntry[]; next: number; last: number }> {
  const { last, pruned } = await counterOf(db, siteId);
  expireBelow(query.since, pruned);
  expireAhead(query.since, last);
  const from = query.since ?? pruned;
  let select = db
    .selectFrom('content_changes')
    .select(ENTRY_COLUMNS)
    .where('site_id', '=', siteId)
    .where('seq', '>', from)
    .where('seq', '<=', last);
  if (query.type !== undefined) select = select.where('type', '=', query.type);
  if (query.id !== undefined) select = select.where('record_id', '=', query.id);
  const rows = (await select.orderBy('seq').limit(query.pageSize).execute()) as ChangeRow[];
  // Retention may have committed between the two reads and removed changes after `since` (a
  // record's delete among them): the counter says so, and the answer is the 410 it would have been.
  // A caught-up cursor had nothing in the range to lose, so it costs no second read.
  if (query.since !== null && query.since < last) expireBelow(query.since, (await counterOf(db, siteId)).pruned);
  const full = rows.length === query.pageSize;
  return { entries: rows.map(entryOf), next: full ? rows[rows.length - 1]!.seq : Math.max(from, last), last };
}

/**
 * The feed (GET /api/changes). With `waitSeconds`, an empty answer is held until a change commits
 * (on this node or any other: `watch` reads the counters from the database) or the time is up, or
 * `stopped` says the client or the server went away.
 */
export async function readFeed(
  db: DbHandle,
  siteId: number,
  query: FeedQuery,
  waitSeconds = 0,
  stopped: () => boolean = () => false,
  watch?: FeedWatch,
): Promise<{ entries: ChangeEntry[]; nextCursor: string }> {
  const deadline = Date.now() + waitSeconds * 1000;
  let page = await feedPage(db, siteId, query);
  if (page.entries.length === 0 && waitSeconds > 0) {
    const waits = watch ?? new FeedWatch(db);
    while (page.entries.length === 0 && Date.now() < deadline && !stopped()) {
      // A second at a time, so that a client that went away is noticed.
      await waits.next(siteId, page.last, Math.min(1000, deadline - Date.now()));
      if (stopped()) break;
      const { last } = await counterOf(db, siteId);
      if (last > page.last) page = await feedPage(db, siteId, { ...query, since: page.next });
    }
  }
  return { entries: page.entries, nextCursor: feedCursor(siteId, page.next) };
}

/** A record's revisions, newest first. A 404 when the website has no trace of it. */
export async function listRevisions(db: DbHandle, siteId: number, type: RecordType, id: number): Promise<ChangeEntry[]> {
  const rows = (await db
    .selectFrom('content_changes')
    .select(ENTRY_COLUMNS)
    .where('site_id', '=', siteId)
    .where('type', '=', type)
    .where('record_id', '=', id)
    .orderBy('revision', 'desc')
    .execute()) as ChangeRow[];
  if (rows.length === 0) throw new NotFoundError(`There is no ${type} ${id} on this website, nor any history of one.`);
  return rows.map(entryOf);
}

/** Revision `revision` of a record: the record's JSON text as it then was. */
export async function getRevision(db: DbHandle, siteId: number, type: RecordType, id: number, revision: number): Promise<string> {
  const row = await db
    .selectFrom('content_changes')
    .select('record_json')
    .where('site_id', '=', siteId)
    .where('type', '=', type)
    .where('record_id', '=', id)
    .where('revision', '=', revision)
    .executeTakeFirst();
  if (!row)
    throw new NotFoundError(
      `The ${type} ${id} of this website has no revision ${revision}: GET /api/${type}/${id}/revisions lists those it has.`,
    );
  return row.record_json;
}

/** What the content services need to restore and delete. */
export interface HistoryDeps {
  readonly db: DbHandle;
  readonly images: ImageStorage;
}

function restoreRecord(
  db: DbHandle,
  siteId: number,
  type: RecordType,
  id: number,
  recordJson: string,
  actor: ActorRef,
  precondition?: Precondition,
): Promise<Saved<PageRecord | BlogRecord>> {
  return type === 'page'
    ? restorePage(db, siteId, id, JSON.parse(recordJson) as PageRecord, actor, precondition)
    : restoreBlog(db, siteId, id, JSON.parse(recordJson) as BlogRecord, actor, precondition);
}

/** POST …/revisions/<n>/restore: makes revision `revision` the record's content, as a new revision. */
export async function restoreRevision(
  db: DbHandle,
  siteId: number,
  type: RecordType,
  id: number,
  revision: number,
  actor: ActorRef,
  precondition?: Precondition,
): Promise<Saved<PageRecord | BlogRecord>> {
  const recordJson = await getRevision(db, siteId, type, id, revision);
  return restoreRecord(db, siteId, type, id, recordJson, actor, precondition);
}

/** The website an OAuth connection is for; a 404 when there is no such connection. */
export async function connectionSite(db: DbHandle, connectionId: string): Promise<number> {
  const row = await db.selectFrom('oauth_connections').select('site_id').where('id', '=', connectionId).executeTakeFirst();
  if (!row) throw new NotFoundError(`There is no OAuth connection ${connectionId}.`);
  return row.site_id;
}

/** The changes one application (its connections) made, newest first, at most `limit`. */
export async function changesBy(
  db: DbHandle,
  siteId: number,
  connectionIds: readonly string[],
  since: string | undefined,
  limit = 200,
): Promise<ChangeEntry[]> {
  if (connectionIds.length === 0) return [];
  let select = db
    .selectFrom('content_changes')
    .select(ENTRY_COLUMNS)
    .where('site_id', '=', siteId)
    .where('actor_kind', 'in', ['oauth', 'mcp'])
    .where('actor_id', 'in', [...connectionIds]);
  if (since !== undefined) select = select.where('at', '>=', since);
  return ((await select.orderBy('seq', 'desc').limit(limit).execute()) as ChangeRow[]).map(entryOf);
}

/**
 * Retention: removes changes older than `days`, except the latest revision of each record that
 * exists; a record deleted longer ago than that goes with its whole history. Each website's pruned
 * number rises, so a feed cursor from before it is refused (410). Running it again, on any node,
 * removes nothing more. Returns the changes removed.
 */
export async function pruneHistory(db: DbHandle, days: number, now = new Date()): Promise<number> {
  const cutoff = formatTimestamp(new Date(now.getTime() - days * 86_400_000));
  return inTransaction(db, async (tx) => {
    const counters = await tx.selectFrom('change_counters').select(['site_id', 'last_seq', 'pruned_seq']).execute();
    let removed = 0;
    for (const { site_id, last_seq, pruned_seq } of counters) {
      const seq = await lastBefore(tx, site_id, cutoff, pruned_seq, last_seq);
      if (seq <= pruned_seq) continue;
      // A later revision of the same record exists.
      const newer = (alias: 'content_changes' | 'gone') => {
        const of = (column: string) => sql.ref(`${alias}.${column}`);
        return sql<SqlBool>`exists (select 1 from content_changes newer where newer.site_id = ${of('site_id')}
          and newer.type = ${of('type')} and newer.record_id = ${of('record_id')} and newer.revision > ${of('revision')})`;
      };
      const superseded = await tx
        .deleteFrom('content_changes')
        .where('site_id', '=', site_id)
        .where('seq', '<=', seq)
        .where(newer('content_changes'))
        .executeTakeFirst();
      // What is left of a record deleted before the cutoff is its delete: the record is gone for good.
      const gone = await tx
        .deleteFrom('content_changes as gone')
        .where('gone.site_id', '=', site_id)
        .where('gone.seq', '<=', seq)
        .where('gone.op', '=', 'delete')
        .where(sql<SqlBool>`not ${newer('gone')}`)
        .executeTakeFirst();
      removed += Number(superseded.numDeletedRows) + Number(gone.numDeletedRows);
      await tx.updateTable('change_counters').set({ pruned_seq: seq }).where('site_id', '=', site_id).execute();
    }
    return removed;
  });
}

/**
 * The number of a website's last change made before `cutoff`, between `low` (pruned already, or
 * 0) and `high` (its last): changes are numbered in the order of their times, so it is found by
 * halving along the key, a few reads by key instead of a scan of the website's history.
 */
async function lastBefore(db: DbHandle, siteId: number, cutoff: string, low: number, high: number): Promise<number> {
  let before = low;
  let from = low + 1;
  let to = high;
  while (from <= to) {
    const middle = Math.floor((from + to) / 2);
    const row = await db
      .selectFrom('content_changes')
      .select(['seq', 'at'])
      .where('site_id', '=', siteId)
      .where('seq', '>=', middle)
      .orderBy('seq')
      .limit(1)
      .executeTakeFirst();
    if (row && row.at < cutoff) {
      before = row.seq;
      from = row.seq + 1;
    } else {
      to = middle - 1;
    }
  }
  return before;
}

/**
 * Retention as it runs on a schedule: the history older than `days` (pruneHistory), then the
 * images that only that history still showed (the sweep the start-up runs, with its grace period).
 */
export async function applyRetention(
  db: DbHandle,
  images: ImageStorage,
  days: number,
  graceMs: number,
  now = new Date(),
): Promise<{ changes: number; images: number }> {
  const changes = await pruneHistory(db, days, now);
  const swept = changes > 0 ? await removeOrphanImages(db, images, graceMs, now.getTime()) : { unreferenced: 0 };
  return { changes, images: swept.unreferenced };
}
