/**
 * Retention: the change history older than HISTORY_DAYS removed on the upkeep schedule, except
 * what a record that exists still needs, and then the images only that history still showed.
 */
import type { DbHandle } from '../../db/schema.js';
import { formatTimestamp } from '../../db/time.js';
import { inTransaction } from '../../db/transaction.js';
import type { ImageStorage } from '../../storage/image-storage.js';
import { removeOrphanImages } from '../blogs/image-cleanup.js';
import { changeCounters, firstChangeFrom, removeLastDeletes, removeSuperseded, setPrunedNumber } from './history.repository.js';

/**
 * Removes changes older than `days`, except the latest revision of each record that exists; a
 * record deleted longer ago than that goes with its whole history. Each website's pruned number
 * rises, so a feed cursor from before it is refused (410). Running it again, on any node, removes
 * nothing more. Returns the changes removed.
 */
export async function pruneHistory(db: DbHandle, days: number, now = new Date()): Promise<number> {
  const cutoff = formatTimestamp(new Date(now.getTime() - days * 86_400_000));
  return inTransaction(db, async (tx) => {
    let removed = 0;
    for (const { site_id, last_seq, pruned_seq } of await changeCounters(tx)) {
      const seq = await lastBefore(tx, site_id, cutoff, pruned_seq, last_seq);
      if (seq <= pruned_seq) continue;
      removed += await removeSuperseded(tx, site_id, seq);
      // What is left of a record deleted before the cutoff is its delete: the record is gone for good.
      removed += await removeLastDeletes(tx, site_id, seq);
      await setPrunedNumber(tx, site_id, seq);
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
    const row = await firstChangeFrom(db, siteId, middle);
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
