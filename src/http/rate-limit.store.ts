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
  hit(key: string, windowSeconds: number): Promise<Hit>;
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
    async hit(key, windowSeconds) {
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
    async reset(key) {
      windows.delete(key);
    },
    async close() {
      windows.clear();
    },
  };
}

// INCR, and start the window's expiry on its first hit, in one round trip and atomically.
const HIT_SCRIPT = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}`;

/** `prefix` starts every key, so that several deployments (or tests) can share one Redis. */
export function redisRateLimits(url: string, prefix = 'cms:'): RateLimitStore {
  // Auto-pipelining: the hits of concurrent requests go out in one write, not one each.
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableAutoPipelining: true });
  // A defined command is sent by its SHA1 (EVALSHA), not as the script's text on every request.
  redis.defineCommand('rateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  const hit = (redis as unknown as { rateLimitHit(key: string, ms: number): Promise<[number, number]> }).rateLimitHit.bind(redis);
  const name = (key: string) => `${prefix}rl:${sha256(key)}`;
  return {
    async hit(key, windowSeconds) {
      const [count, ttl] = await hit(name(key), windowSeconds * 1000);
      return { count, retryAfter: Math.max(1, Math.ceil(ttl / 1000)) };
    },
    async reset(key) {
      await redis.del(name(key));
    },
    async close() {
      redis.disconnect();
    },
  };
}

/**
 * The app's two kinds of counters. `shared` counts what an attacker would multiply across nodes
 * (sign-in guesses, registrations): in Redis, else in the database. `perRequest` counts limits
 * checked on every request of a kind (the content API, the token endpoints): in Redis, else in
 * this process, since a database write on each would cost more than the limit protects.
 * With Redis both are one connection. docs/rate-limits.md says where each limit counts.
 */
export interface RateLimitStores {
  readonly shared: RateLimitStore;
  readonly perRequest: RateLimitStore;
  close(): Promise<void>;
}

export function rateLimitStores(db: DbHandle, config: Pick<Config, 'redisUrl' | 'redisKeyPrefix'>): RateLimitStores {
  if (config.redisUrl) {
    const store = redisRateLimits(config.redisUrl, config.redisKeyPrefix);
    return { shared: store, perRequest: store, close: () => store.close() };
  }
  const shared = databaseRateLimits(db);
  const perRequest = memoryRateLimits();
  return { shared, perRequest, close: () => perRequest.close() };
}

/** Deletes windows that have ended (database store only). */
export async function purgeRateLimits(db: DbHandle): Promise<void> {
  await db.deleteFrom('rate_limits').where('reset_at', '<=', formatTimestamp(new Date())).execute();
}
