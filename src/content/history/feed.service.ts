/**
 * The feed of a website's changes (GET /api/changes, the MCP tool): a page of the change log after
 * a cursor, held open until a change commits when asked to wait. The cursors name the website and
 * the last change seen; one ahead of the log or below what retention removed is a 410.
 */
import type { DbHandle } from '../../db/schema.js';
import { CursorExpiredError, ValidationError } from '../../errors.js';
import { keysetCursor } from '../shared/cursor.js';
import { FeedWatch } from './feed-watch.js';
import { type ChangeEntry, changesBetween, counterOf, type RecordType } from './history.repository.js';

export type { ChangeEntry } from './history.repository.js';

/**
 * Feed cursors: the website and the number of the last change a client has seen. Opaque to
 * clients; the website is in it so that a cursor of one website's feed is refused by another's,
 * whose numbers mean something else.
 */
const FEED_CURSOR = keysetCursor('c', ['int', 'int']);

/** The cursor that follows change `seq` of website `siteId`. */
function feedCursor(siteId: number, seq: number): string {
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

interface FeedQuery {
  readonly since: number | null;
  readonly type?: RecordType | undefined;
  readonly id?: number | undefined;
  readonly pageSize: number;
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
  const entries = await changesBetween(db, siteId, { from, upTo: last, type: query.type, id: query.id, limit: query.pageSize });
  // Retention may have committed between the two reads and removed changes after `since` (a
  // record's delete among them): the counter says so, and the answer is the 410 it would have been.
  // A caught-up cursor had nothing in the range to lose, so it costs no second read.
  if (query.since !== null && query.since < last) expireBelow(query.since, (await counterOf(db, siteId)).pruned);
  const full = entries.length === query.pageSize;
  return { entries, next: full ? entries[entries.length - 1]!.seq : Math.max(from, last), last };
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
