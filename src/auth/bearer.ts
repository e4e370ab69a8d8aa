import { sha256 } from '../accounts/secrets.js';
import type { DbHandle } from '../db/schema.js';
import { formatTimestamp, parseTimestamp } from '../db/time.js';
import { UnauthorizedError } from '../errors.js';
import { andThen, type MaybePromise } from '../maybe-async.js';
import { type LiveAccess, readLiveAccess, touchConnection } from '../oauth/connections/connection.repository.js';
import { type AuthMethod, afterLastUse, type Principal } from './principal.js';
import { memoisePerTick, type PrincipalCache } from './principal-cache.js';

function invalid(): UnauthorizedError {
  return new UnauthorizedError(
    'The access token is not valid: unknown, expired or revoked. Get a new one with your refresh token at /api/auth/token, or by authorizing again.',
    'invalid_token',
  );
}

/** The fields of a stored access token (oidc-provider's AccessToken payload) that a resource request needs. */
interface AccessTokenPayload {
  aud?: unknown;
  scope?: unknown;
}

/** What a resource request needs of a token: its audience and its scopes. */
interface TokenClaims {
  aud: unknown;
  scopes: ReadonlySet<string>;
}

/**
 * Claims by the stored payload text they were parsed from. A token's payload is written once and
 * never changed, so the text decides the claims, and parsing it (and splitting its scopes) is
 * done once per text rather than on every request. Per process and bounded: it holds no state another
 * node needs, and whether a token is live is still the database's answer (the principal cache
 * forgets it on any change).
 */
const claimsByPayload = new Map<string, TokenClaims>();
const CLAIMS_KEPT = 1000;

function claimsOf(payload: string): TokenClaims {
  let claims = claimsByPayload.get(payload);
  if (!claims) {
    const token = JSON.parse(payload) as AccessTokenPayload;
    claims = { aud: token.aud, scopes: new Set(typeof token.scope === 'string' ? token.scope.split(' ').filter(Boolean) : []) };
    if (claimsByPayload.size >= CLAIMS_KEPT) claimsByPayload.clear();
    claimsByPayload.set(payload, claims);
  }
  return claims;
}

/** When a live token stops being live: its own end or its connection's, whichever comes first (ms). */
function endOf(access: LiveAccess): number {
  const connectionEnds = parseTimestamp(access.expires_at);
  return access.token_expires_at === null ? connectionEnds : Math.min(parseTimestamp(access.token_expires_at), connectionEnds);
}

const expiryOf = (principal: Principal) => principal.expiresAt;

/** Whether a token read as live still is at `at`: neither it nor its connection has expired since. */
function liveAt(access: LiveAccess, at: string): boolean {
  return (access.token_expires_at === null || access.token_expires_at > at) && access.expires_at > at;
}

/**
 * OAuth access tokens, from the Authorization header only (RFC 6750 §2.1; OAuth 2.1 forbids the
 * query string, so ?access_token= is never read). Tokens are opaque and stored: each request reads
 * the token together with its connection in one query (readLiveAccess), kept per process until the
 * database says a token or connection changed (principal-cache.ts): a revoked connection fails on
 * the very next request on the node that revoked it, and within milliseconds on the others. The
 * token is read from the adapter's table directly rather than
 * through oidc-provider's AccessToken.find: the same row, the same expiry, without building the
 * provider's model and a second read for the grant (so Bearer reads cost what key reads do).
 * The website comes from the connection.
 */
export function bearerAuth(db: DbHandle, resource: string, cache: PrincipalCache | undefined): AuthMethod {
  /** A token's SHA-256, computed once a tick (principal-cache.ts). */
  const hashOf = memoisePerTick(sha256);
  /** The principal of a token as read, once it is live for this resource; at once unless its last use is due to be written. */
  const principalFor = (access: LiveAccess | undefined, now: Date, at: string): MaybePromise<Principal> => {
    if (!access?.payload || !liveAt(access, at)) throw invalid();
    const claims = claimsOf(access.payload);
    if (claims.aud !== resource) {
      // Live, but for the other resource: say so, or a client would throw away a good token.
      throw new UnauthorizedError(
        `The access token was issued for ${String(claims.aud)}, not for ${resource}: ask for a token with resource=${resource}.`,
        'invalid_token',
      );
    }
    const principal: Principal = {
      siteId: access.site_id,
      scopes: claims.scopes,
      method: 'bearer',
      subject: access.id,
      expiresAt: endOf(access),
    };
    return afterLastUse(principal, access.last_used_at, now, (last_used_at) => touchConnection(db, access.grant_id, { last_used_at }));
  };
  const verify = (hashed: string): MaybePromise<Principal> => {
    const now = new Date();
    const at = formatTimestamp(now);
    return andThen(readLiveAccess(db, hashed, at), (found) => principalFor(found, now, at));
  };
  return {
    name: 'bearer',
    authenticate(request) {
      const header = request.headers.authorization;
      if (!header || !/^bearer /i.test(header)) return undefined;
      const value = header.slice(7).trim();
      if (!value) throw invalid();
      const hashed = hashOf(value);
      // The principal the token proved for this resource (a token for the other one is refused,
      // never kept under this key), kept per process until the database says a token or
      // connection changed (principal-cache.ts), and never past the token's or connection's end.
      return cache ? cache.read(`token:${resource}:${hashed}`, () => verify(hashed), expiryOf) : verify(hashed);
    },
  };
}
