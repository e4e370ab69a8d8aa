import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { sha256 } from '../accounts/secrets.js';
import type { Config } from '../config.js';
import type { DbHandle } from '../db/schema.js';
import { formatTimestamp, parseTimestamp } from '../db/time.js';

export interface Hit {
  /** Attempts in the current window, this one included. */
  count: number;
  /** Seconds until the window ends. */
  retryAfter: number;
}

/**
 * Fixed-window counters that every process shares: in the database, or in Redis when REDIS_URL
 * is set. Keys are hashed, so no e-mail address or IP is stored in the clear.
 */
export interface RateLimitStore {
  /**
   * `quota`: the limit the caller applies, for a store that counts exactly only near it. A store
   * that counts in this process answers at once, without a promise: this runs on every request.
   */
  hit(key: string, windowSeconds: number, quota?: number): Hit | Promise<Hit>;
  /**
   * Takes back one hit of the key's current window (never below zero): a hit counted before the
   * outcome was known, that turned out not to count. Counting first keeps a burst from slipping past.
   */
  takeBack(key: string): Promise<void>;
  reset(key: string): Promise<void>;
  close(): Promise<void>;
}

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

/**
 * Counters of this process alone: for limits checked on every request, where a database write
 * each time would cost more than the limit saves. Lapsed windows are dropped once per window.
 */
export function memoryRateLimits(): RateLimitStore {
  const windows = new Map<string, { count: number; endsAt: number }>();
  let sweepAt = 0;
  return {
    hit(key, windowSeconds) {
      const now = Date.now();
      if (now >= sweepAt) {
        for (const [k, w] of windows) if (w.endsAt <= now) windows.delete(k);
        sweepAt = now + windowSeconds * 1000;
      }
      let window = windows.get(key);
      if (!window || window.endsAt <= now) {
        window = { count: 0, endsAt: now + windowSeconds * 1000 };
        windows.set(key, window);
      }
      window.count += 1;
      return { count: window.count, retryAfter: Math.max(1, Math.ceil((window.endsAt - now) / 1000)) };
    },
    async takeBack(key) {
      const window = windows.get(key);
      if (window && window.endsAt > Date.now() && window.count > 0) window.count -= 1;
    },
    async reset(key) {
      windows.delete(key);
    },
    async close() {
      windows.clear();
    },
  };
}

// INCRBY, and start the window's expiry on its first hit, in one round trip and atomically.
const HIT_SCRIPT = `local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if n == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}`;

// DECR only a live window's positive count: a lapsed key stays gone, the window's expiry unchanged.
const TAKE_BACK_SCRIPT = `if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
return 0`;

interface RedisStore extends RateLimitStore {
  /** Adds `amount` hits at once. */
  add(key: string, amount: number, windowSeconds: number): Promise<Hit>;
}

/**
 * `prefix` starts every key, so that several deployments (or tests) can share one Redis.
 * `onUnreachable` is told once per outage, when the connection to Redis fails (and again after it came back).
 */
export function redisRateLimits(url: string, prefix = 'cms:', onUnreachable?: (error: Error) => void): RedisStore {
  // Auto-pipelining: the hits of concurrent requests go out in one write, not one each.
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableAutoPipelining: true });
  // Without a listener ioredis writes each failed reconnection to stderr, outside the JSON log,
  // every few seconds for as long as Redis is away. Meanwhile the requests that need a counter fail.
  let reported = false;
  redis.on('error', (error: Error) => {
    if (reported) return;
    reported = true;
    onUnreachable?.(error);
  });
  redis.on('ready', () => {
    reported = false;
  });
  // A defined command is sent by its SHA1 (EVALSHA), not as the script's text on every request.
  redis.defineCommand('rateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  redis.defineCommand('rateLimitTakeBack', { numberOfKeys: 1, lua: TAKE_BACK_SCRIPT });
  const run = (redis as unknown as { rateLimitHit(key: string, ms: number, n: number): Promise<[number, number]> }).rateLimitHit.bind(
    redis,
  );
  const name = (key: string) => `${prefix}rl:${sha256(key)}`;
  const add = async (key: string, amount: number, windowSeconds: number) => {
    const [count, ttl] = await run(name(key), windowSeconds * 1000, amount);
    return { count, retryAfter: Math.max(1, Math.ceil(ttl / 1000)) };
  };
  return {
    add,
    hit: (key, windowSeconds) => add(key, 1, windowSeconds),
    async takeBack(key) {
      await (redis as unknown as { rateLimitTakeBack(key: string): Promise<number> }).rateLimitTakeBack(name(key));
    },
    async reset(key) {
      await redis.del(name(key));
    },
    async close() {
      redis.disconnect();
    },
  };
}

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

/**
 * The app's two kinds of counters. `shared` counts what an attacker would multiply across nodes
 * (sign-in guesses, registrations): in Redis, else in the database. `perRequest` counts limits
 * checked on every request of a kind (the content API, the token endpoints): in Redis, else in
 * this process, since a database write on each would cost more than the limit protects.
 * With Redis both share one connection; the per-request counts are synchronised with Redis at
 * most every 100 ms per key away from the quota (syncedRateLimits). docs/rate-limits.md says more.
 */
export interface RateLimitStores {
  readonly shared: RateLimitStore;
  readonly perRequest: RateLimitStore;
  close(): Promise<void>;
}

export function rateLimitStores(
  db: DbHandle,
  config: Pick<Config, 'redisUrl' | 'redisKeyPrefix'>,
  onUnreachable?: (error: Error) => void,
): RateLimitStores {
  if (config.redisUrl) {
    const store = redisRateLimits(config.redisUrl, config.redisKeyPrefix, onUnreachable);
    return { shared: store, perRequest: syncedRateLimits(store), close: () => store.close() };
  }
  const shared = databaseRateLimits(db);
  const perRequest = memoryRateLimits();
  return { shared, perRequest, close: () => perRequest.close() };
}

/** Deletes windows that have ended (database store only). */
export async function purgeRateLimits(db: DbHandle): Promise<void> {
  await db.deleteFrom('rate_limits').where('reset_at', '<=', formatTimestamp(new Date())).execute();
}
