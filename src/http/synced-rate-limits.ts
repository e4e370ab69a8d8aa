import type { Hit, RateLimitStore } from './rate-limit.js';
import type { RedisStore } from './redis-rate-limits.js';

interface SyncedWindow {
  total: number;
  pending: number;
  syncedAt: number;
  endsAt: number;
}

/** How long a node counts a key on its own before it adds its hits to Redis and reads the total. */
const SYNC_EVERY_MS = 100;

/**
 * Redis counts for limits checked on every request, without a round trip on every request: each
 * key is synchronised (this node's hits added, the total of all nodes read) on its first hit of a
 * window, then at most every 100 ms, and on every hit once the count is within a tenth of the
 * quota. In between, the count is the last total plus this node's hits since. So a count can
 * miss what other nodes counted, unsynchronised, in their last 100 ms, and a refusal come that
 * much late; within a tenth of the quota every node adds its hits at once.
 */
export function syncedRateLimits(remote: RedisStore): RateLimitStore {
  const local = new Map<string, SyncedWindow>();
  let sweepAt = 0;
  const synchronise = async (key: string, known: SyncedWindow | undefined, windowSeconds: number, now: number): Promise<Hit> => {
    // This hit and those counted here since the last synchronisation; hits during the call wait for the next.
    const amount = known && known.endsAt > now ? known.pending + 1 : 1;
    if (known) known.pending = 0;
    const hit = await remote.add(key, amount, windowSeconds);
    const state = local.get(key);
    local.set(key, {
      total: hit.count,
      pending: state === known ? (state?.pending ?? 0) : 0,
      syncedAt: now,
      endsAt: now + hit.retryAfter * 1000,
    });
    return hit;
  };
  return {
    hit(key, windowSeconds, quota = Number.POSITIVE_INFINITY) {
      const now = Date.now();
      if (now >= sweepAt) {
        for (const [k, w] of local) if (w.endsAt <= now) local.delete(k);
        sweepAt = now + windowSeconds * 1000;
      }
      const known = local.get(key);
      if (known && known.endsAt > now && now - known.syncedAt < SYNC_EVERY_MS && known.total + known.pending + 1 < quota * 0.9) {
        known.pending += 1;
        return { count: known.total + known.pending, retryAfter: Math.max(1, Math.ceil((known.endsAt - now) / 1000)) };
      }
      return synchronise(key, known, windowSeconds, now);
    },
    async takeBack(key) {
      // A hit not yet added to Redis is simply not added; otherwise Redis and the known total lose one.
      const known = local.get(key);
      if (known && known.pending > 0) {
        known.pending -= 1;
        return;
      }
      if (known && known.total > 0) known.total -= 1;
      await remote.takeBack(key);
    },
    reset: (key) => {
      local.delete(key);
      return remote.reset(key);
    },
    close: () => remote.close(),
  };
}
