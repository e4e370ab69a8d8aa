/** Counters in Redis (REDIS_URL), shared by every node, and how the connection's outages are told. */
import { Redis, ReplyError } from 'ioredis';
import { sha256 } from '../accounts/secrets.js';
import type { Hit, RateLimitStore } from './rate-limit.js';

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
export interface RedisEvents {
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
