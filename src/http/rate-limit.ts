/**
 * Rate limits: the policies (the API's per-credential limit, and the RateLimit headers every
 * counted answer carries) and what a fixed-window store of counters does. The stores are one file
 * each: database-rate-limits.ts, memory-rate-limits.ts, redis-rate-limits.ts and
 * synced-rate-limits.ts; configured-rate-limits.ts picks them.
 */
import type { FastifyReply } from 'fastify';
import type { CountRequest } from '../auth/authenticate.js';
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
