/**
 * The principal: who is calling and for which website, the scopes it holds, and the credential
 * methods that prove it. What a credential proved is kept by the principal cache (principal-cache.ts).
 */
import type { FastifyRequest } from 'fastify';
import { formatTimestamp, timestampBefore } from '../db/time.js';
import type { MaybePromise } from '../maybe-async.js';

/** Who is calling, and for which website: every content query is scoped by `siteId`. */
export interface Principal {
  readonly siteId: number;
  readonly scopes: ReadonlySet<string>;
  readonly method: 'api-key' | 'bearer';
  /** API ID or OAuth connection id: what to name in logs, never a secret. */
  readonly subject: string;
  /** When the credential stops being valid (ms since the epoch): an access token's end; none for an API key. */
  readonly expiresAt?: number;
  /** The API credential's default page: where a blog posted without `page` goes. */
  readonly defaultPage?: number;
}

/**
 * One way of proving identity. Returns undefined when the request carries no credentials of this
 * kind (the next method is tried); throws UnauthorizedError when it carries bad ones (or rejects,
 * when it answers with a promise). It answers at once when what it needs is kept in memory.
 */
export interface AuthMethod {
  readonly name: string;
  authenticate(request: FastifyRequest): MaybePromise<Principal | undefined>;
}

/** Writing last_used_at on every request would turn each read into a write; once per 10 minutes is enough. */
const TOUCH_EVERY_MS = 10 * 60 * 1000;

/** Whether a credential's stored last-use time (`YYYY-MM-DD HH:MM:SS` or null) is due to be written again. */
export function lastUseIsStale(lastUsedAt: string | null, now: Date): boolean {
  // As text, to the second: parsing the stored time would cost every request a Date.
  return lastUsedAt === null || lastUsedAt < timestampBefore(now, TOUCH_EVERY_MS);
}

/**
 * A principal as soon as it is known, or once its last use has been written when that is due
 * (lastUseIsStale): `touch` writes the time, stored form, on the credential or connection.
 */
export function afterLastUse(
  principal: Principal,
  lastUsedAt: string | null,
  now: Date,
  touch: (at: string) => Promise<unknown>,
): MaybePromise<Principal> {
  if (!lastUseIsStale(lastUsedAt, now)) return principal;
  return touch(formatTimestamp(now)).then(() => principal);
}
