/**
 * Rate limits: the policies (the API's per-credential limit, and the RateLimit headers every
 * counted answer carries) and the fixed-window stores that count them, in the database, in Redis
 * or in this process.
 */
import type { FastifyReply } from 'fastify';
import { Redis, ReplyError } from 'ioredis';
import { sql } from 'kysely';
import { sha256 } from '../accounts/secrets.js';
import type { CountRequest } from '../auth/authenticate.js';
import type { Config } from '../config.js';
import type { DbHandle } from '../db/schema.js';
import { formatTimestamp, parseTimestamp } from '../db/time.js';
import { TooManyRequestsError } from '../errors.js';
import { andThen } from '../maybe-async.js';

export const RATE_WINDOW_SECONDS = 60;

/** One counter a request was counted in: its policy's name, quota per window, and the count. */
export interface Counted {
  readonly policy: string;
  readonly quota: number;
  readonly windowSeconds: number;
  readonly hit: Hit;
}

/**
 * The fields of draft-ietf-httpapi-ratelimit-headers in its structured-field form: each policy
 * (quota q per window w seconds) and what is left of it (r remaining, t seconds to the reset),
 * one list member per counter. @fastify/rate-limit writes the older draft's x-ratelimit-* instead.
 */
function rateLimitFields(counted: readonly Counted[]): Record<string, string> {
  return {
    'ratelimit-policy': counted.map(policyField).join(', '),
    ratelimit: counted.map(remainingField).join(', '),
  };
}

const policyField = (c: Omit<Counted, 'hit'>) => `"${c.policy}";q=${c.quota};w=${c.windowSeconds}`;
const remainingField = (c: Counted) => `"${c.policy}";r=${Math.max(0, c.quota - c.hit.count)};t=${c.hit.retryAfter}`;

/**
 * Puts the fields on the reply; past any quota, a 429 problem whose Retry-After waits for the
 * last exceeded window to end. `who` names the counted party in the problem's detail.
 */
export function enforce(reply: FastifyReply, counted: readonly Counted[], who: (exceeded: Counted) => string): void {
  reply.headers(rateLimitFields(counted));
  const exceeded = counted.filter((c) => c.hit.count > c.quota);
  if (exceeded.length === 0) return;
  const retryAfter = Math.max(...exceeded.map((c) => c.hit.retryAfter));
  reply.header('retry-after', String(retryAfter));
  const [first] = exceeded as [Counted];
  throw new TooManyRequestsError(
    `${who(first)} made more than ${first.quota} requests in ${first.windowSeconds} seconds; try again in ${retryAfter} seconds.`,
  );
}

/**
 * RATE_LIMIT_API: requests per minute per credential (an API key, or an OAuth connection, so
 * one application cannot use up another's share of a website). Counted by the authentication
 * hook once the principal is known (installAuthentication's `count`); public routes are not
 * counted. Undefined when the limit is off (0). With the in-process store a request is counted
 * without a promise: this runs on every request (bench:ratelimit).
 */
export function apiRateLimit(perMinute: number, store: RateLimitStore): CountRequest | undefined {
  if (perMinute === 0) return undefined;
  const policy = { policy: 'api', quota: perMinute, windowSeconds: RATE_WINDOW_SECONDS };
  const policyHeader = policyField(policy);
  const who = () => 'These credentials';
  const counted = (reply: FastifyReply, hit: Hit): undefined => {
    const count = { ...policy, hit };
    if (hit.count > perMinute) enforce(reply, [count], who);
    reply.header('ratelimit-policy', policyHeader);
    reply.header('ratelimit', remainingField(count));
    return undefined;
  };
  return (request, reply) => {
    const principal = request.principal!;
    const hit = store.hit(`api:${principal.method}:${principal.subject}`, RATE_WINDOW_SECONDS, perMinute);
    return andThen(hit, (h) => counted(reply, h));
  };
}

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

/** The client's bounds: a request never waits on Redis longer than this, nor retries. */
const REDIS_TIMEOUT_MS = 500;
/** The pause between attempts to reconnect grows with each attempt, up to this. */
const REDIS_RECONNECT_MAX_MS = 2000;

/** What an outage is reported with: the error's message and code, never its command (an AUTH's arguments hold the password). */
export interface RedisFailure {
  message: string;
  code?: string;
}

/** Told once when Redis stops answering (a failed connection or command), and once when it answers again. */
interface RedisEvents {
  outage(failure: RedisFailure): void;
  recovered(): void;
}

export interface RedisStore extends RateLimitStore {
  /** Adds `amount` hits at once. */
  add(key: string, amount: number, windowSeconds: number): Promise<Hit>;
  /** Whether the connection is up now: a command sent while it is not fails at once. */
  connected(): boolean;
  /** Settles once the first attempt to connect has succeeded or failed. */
  readonly firstConnection: Promise<void>;
  /** Whether Redis answers a PING, within the command timeout. */
  answers(): Promise<boolean>;
}

/**
 * `prefix` starts every key, so that several deployments (or tests) can share one Redis.
 * While the connection is down a command fails at once (no offline queue, no retry per
 * command); a command or a connection attempt that gets no answer fails after REDIS_TIMEOUT_MS.
 * The client reconnects in the background, on its own, as long as the store is open.
 */
export function redisRateLimits(url: string, prefix = 'cms:', events?: RedisEvents): RedisStore {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: REDIS_TIMEOUT_MS,
    commandTimeout: REDIS_TIMEOUT_MS,
    // A Redis that takes a command and never answers (stopped, or behind a dropped route) is a
    // lost connection: the socket is closed and the client reconnects, so later requests do not wait too.
    socketTimeout: REDIS_TIMEOUT_MS,
    retryStrategy: (attempt) => Math.min(attempt * 100, REDIS_RECONNECT_MAX_MS),
    // Auto-pipelining: the hits of concurrent requests go out in one write, not one each.
    enableAutoPipelining: true,
  });
  // Without a listener ioredis writes each failed reconnection to stderr, outside the JSON log,
  // every few seconds for as long as Redis is away.
  let out = false;
  const failed = (error: Error & { code?: string }) => {
    if (out) return;
    out = true;
    events?.outage(error.code ? { message: error.message, code: error.code } : { message: error.message });
  };
  const succeeded = () => {
    if (!out) return;
    out = false;
    events?.recovered();
  };
  // A command refused because the connection is down is a symptom: the connection's own error
  // event names the cause. An error reply is reported here, since the connection stays up.
  const watched = <T>(command: Promise<T>): Promise<T> =>
    command.then(
      (value) => {
        succeeded();
        return value;
      },
      (error: Error) => {
        if (error instanceof ReplyError) failed(error);
        throw error;
      },
    );
  redis.on('error', failed);
  redis.on('ready', succeeded);
  const firstConnection = new Promise<void>((resolve) => {
    redis.once('ready', resolve);
    redis.once('error', () => resolve());
  });
  // A defined command is sent by its SHA1 (EVALSHA), not as the script's text on every request.
  redis.defineCommand('rateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  redis.defineCommand('rateLimitTakeBack', { numberOfKeys: 1, lua: TAKE_BACK_SCRIPT });
  const run = (redis as unknown as { rateLimitHit(key: string, ms: number, n: number): Promise<[number, number]> }).rateLimitHit.bind(
    redis,
  );
  const name = (key: string) => `${prefix}rl:${sha256(key)}`;
  const add = async (key: string, amount: number, windowSeconds: number) => {
    const [count, ttl] = await watched(run(name(key), windowSeconds * 1000, amount));
    return { count, retryAfter: Math.max(1, Math.ceil(ttl / 1000)) };
  };
  return {
    add,
    hit: (key, windowSeconds) => add(key, 1, windowSeconds),
    async takeBack(key) {
      await watched((redis as unknown as { rateLimitTakeBack(key: string): Promise<number> }).rateLimitTakeBack(name(key)));
    },
    async reset(key) {
      await watched(redis.del(name(key)));
    },
    connected: () => redis.status === 'ready',
    firstConnection,
    answers: () =>
      watched(redis.ping()).then(
        () => true,
        () => false,
      ),
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
 * this process, since a database write on each would cost more than the limit protects.
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
  const local = memoryRateLimits();
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

/** Deletes windows that have ended (database store: without Redis, or counted while Redis was away). */
export async function purgeRateLimits(db: DbHandle): Promise<number> {
  const result = await db.deleteFrom('rate_limits').where('reset_at', '<=', formatTimestamp(new Date())).executeTakeFirst();
  return Number(result.numDeletedRows);
}
