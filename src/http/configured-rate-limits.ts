import cluster from 'node:cluster';
import type { Config } from '../config.js';
import type { DbHandle } from '../db/schema.js';
import { clusterRateLimits } from './cluster-rate-limits.js';
import { databaseRateLimits } from './database-rate-limits.js';
import { memoryRateLimits } from './memory-rate-limits.js';
import type { RateLimitStore } from './rate-limit.js';
import { type RedisEvents, type RedisStore, redisRateLimits } from './redis-rate-limits.js';
import { syncedRateLimits } from './synced-rate-limits.js';

/**
 * `primary` while `usable()` says so, else `fallback`; a command of `primary` that fails (the
 * connection lost on the way, a timeout, an error reply) is answered by `fallback` too. So a
 * request never waits for Redis to come back and never fails because it is away. A reset clears
 * both stores: a success must not leave guesses counted during an outage for the next one.
 * Switching stores starts the count of the current window again in the other store.
 */
export function withFallback(primary: RateLimitStore, fallback: RateLimitStore, usable: () => boolean): RateLimitStore {
  return {
    hit(key, windowSeconds, quota) {
      if (!usable()) return fallback.hit(key, windowSeconds, quota);
      const hit = primary.hit(key, windowSeconds, quota);
      return hit instanceof Promise ? hit.catch(() => fallback.hit(key, windowSeconds, quota)) : hit;
    },
    takeBack: (key) => (usable() ? primary.takeBack(key).catch(() => fallback.takeBack(key)) : fallback.takeBack(key)),
    async reset(key) {
      await Promise.all([fallback.reset(key), usable() ? primary.reset(key).catch(() => undefined) : undefined]);
    },
    async close() {
      await Promise.all([primary.close(), fallback.close()]);
    },
  };
}

/**
 * The app's two kinds of counters. `shared` counts what an attacker would multiply across nodes
 * (sign-in guesses, registrations): in Redis, else in the database. `perRequest` counts limits
 * checked on every request of a kind (the content API, the token endpoints): in Redis, else in
 * this process (or, for the workers of one machine, in their primary: cluster-rate-limits.ts),
 * since a database write on each would cost more than the limit protects.
 * With Redis both share one connection; the per-request counts are synchronised with Redis at
 * most every 100 ms per key away from the quota (syncedRateLimits). While Redis is away each
 * falls back to what it would use without Redis: `shared` to the database (still shared by every
 * node, so a guesser gains nothing from the outage), `perRequest` to this process (a load limit:
 * each node keeps its own quota). docs/rate-limits.md says more.
 */
export interface RateLimitStores {
  readonly shared: RateLimitStore;
  readonly perRequest: RateLimitStore;
  /** With REDIS_URL: the connection, for /readyz and to wait for at start. */
  readonly redis?: Pick<RedisStore, 'firstConnection' | 'answers'>;
  close(): Promise<void>;
}

export function rateLimitStores(db: DbHandle, config: Pick<Config, 'redisUrl' | 'redisKeyPrefix'>, events?: RedisEvents): RateLimitStores {
  const database = databaseRateLimits(db);
  // The workers of one machine (WORKERS > 1) count in their primary process: once per machine.
  const local = cluster.isWorker ? clusterRateLimits(memoryRateLimits()) : memoryRateLimits();
  if (config.redisUrl) {
    const redis = redisRateLimits(config.redisUrl, config.redisKeyPrefix, events);
    const connected = () => redis.connected();
    return {
      shared: withFallback(redis, database, connected),
      perRequest: withFallback(syncedRateLimits(redis), local, connected),
      redis,
      close: () => Promise.all([redis.close(), local.close()]).then(() => undefined),
    };
  }
  return { shared: database, perRequest: local, close: () => local.close() };
}
