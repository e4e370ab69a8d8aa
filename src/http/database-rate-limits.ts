/** Counters in the database (table rate_limits), shared by every node: without Redis, and while it is away. */
import { sql } from 'kysely';
import { sha256 } from '../accounts/secrets.js';
import type { DbHandle } from '../db/schema.js';
import { formatTimestamp, parseTimestamp } from '../db/time.js';
import type { RateLimitStore } from './rate-limit.js';

export function databaseRateLimits(db: DbHandle): RateLimitStore {
  return {
    async hit(key, windowSeconds) {
      const now = new Date();
      const current = formatTimestamp(now);
      const resetAt = formatTimestamp(new Date(now.getTime() + windowSeconds * 1000));
      // One statement, atomic on both databases: a new or lapsed window starts at 1.
      const lapsed = sql<boolean>`rate_limits.reset_at <= ${current}`;
      const row = await db
        .insertInto('rate_limits')
        .values({ key: sha256(key), count: 1, reset_at: resetAt })
        .onConflict((oc) =>
          oc.column('key').doUpdateSet({
            count: sql`case when ${lapsed} then 1 else rate_limits.count + 1 end`,
            reset_at: sql`case when ${lapsed} then ${resetAt} else rate_limits.reset_at end`,
          }),
        )
        .returning(['count', 'reset_at'])
        .executeTakeFirstOrThrow();
      const ends = parseTimestamp(row.reset_at);
      return { count: Number(row.count), retryAfter: Math.max(1, Math.ceil((ends - now.getTime()) / 1000)) };
    },
    async takeBack(key) {
      await db
        .updateTable('rate_limits')
        .set({ count: sql`count - 1` })
        .where('key', '=', sha256(key))
        .where('count', '>', 0)
        .where('reset_at', '>', formatTimestamp(new Date()))
        .execute();
    },
    async reset(key) {
      await db.deleteFrom('rate_limits').where('key', '=', sha256(key)).execute();
    },
    async close() {},
  };
}

/** Deletes windows that have ended (database store: without Redis, or counted while Redis was away). */
export async function purgeRateLimits(db: DbHandle): Promise<number> {
  const result = await db.deleteFrom('rate_limits').where('reset_at', '<=', formatTimestamp(new Date())).executeTakeFirst();
  return Number(result.numDeletedRows);
}
