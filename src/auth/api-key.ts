import type { FastifyRequest } from 'fastify';
import { type CredentialRow, readCredential, touchCredential } from '../accounts/account.repository.js';
import { sameHash, sha256 } from '../accounts/secrets.js';
import type { DbHandle } from '../db/schema.js';
import { BadRequestError, UnauthorizedError } from '../errors.js';
import { andThen, type MaybePromise } from '../maybe-async.js';
import { type AuthMethod, afterLastUse, type Principal } from './principal.js';
import { memoisePerTick, type PrincipalCache } from './principal-cache.js';

/** A credential made without scopes carries every permission of its website (DESIGN §2), as the hosted platform's keys do. */
const LEGACY_SCOPES: ReadonlySet<string> = new Set(['everything:read', 'everything:write']);

/** The scopes of a credential as stored: space-separated, or null for every permission. */
function scopesOf(stored: string | null): ReadonlySet<string> {
  return stored === null ? LEGACY_SCOPES : new Set(stored.split(' '));
}

/** The Authorization header when it carries HTTP Basic credentials: they come first. */
function basicOf(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  return authorization && /^basic /i.test(authorization) ? authorization : undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The API ID and key when the request sent them where the hosted platform's clients do, outside
     * the headers: as the query parameters apiID and apiKey, or as fields of a form body.
     */
    legacyCredentials: LegacyCredentials | undefined;
  }
}

/** apiID and apiKey as sent in a query string or a form: each a string when sent once. */
export interface LegacyCredentials {
  readonly apiId: unknown;
  readonly apiKey: unknown;
}

/** A parsed query string or form: named fields. */
export function isFields(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The names of the hosted platform's credential parameters and fields, in any letter case. */
const LEGACY_NAME = /^api(id|key)$/i;

/** Whether `name` is apiID or apiKey in some letter case, and which. */
export function legacyCredentialName(name: string): 'apiId' | 'apiKey' | undefined {
  const match = LEGACY_NAME.exec(name);
  return match ? (match[1]!.length === 2 ? 'apiId' : 'apiKey') : undefined;
}

/**
 * Takes apiID and apiKey out of the query, so that no route sees them as its own parameters;
 * undefined when the query has neither. `allowed` false (LEGACY_QUERY_CREDENTIALS=false) refuses
 * them: a URL is kept by browser histories, proxies and other people's logs.
 */
function takeFromQuery(request: FastifyRequest, allowed: boolean): LegacyCredentials | undefined {
  const query = request.query;
  if (!isFields(query)) return undefined;
  let found: { apiId?: unknown; apiKey?: unknown } | undefined;
  for (const name in query) {
    const which = legacyCredentialName(name);
    if (!which) continue;
    found ??= {};
    found[which] = query[name];
    delete query[name];
  }
  if (found && !allowed) {
    throw new BadRequestError(
      'API credentials in the query string are turned off on this server: send them as headers (apiID and apiKey, X-Api-Id and X-Api-Key, or HTTP Basic).',
    );
  }
  return found && { apiId: found.apiId, apiKey: found.apiKey };
}

/** The API ID and key as one header pair (X-Api-Id and X-Api-Key, or the hosted platform's apiID and apiKey), or as legacy credentials. */
function pairOf(request: FastifyRequest): LegacyCredentials | undefined {
  const headers = request.headers;
  const apiId = headers['x-api-id'] ?? headers.apiid;
  const apiKey = headers['x-api-key'] ?? headers.apikey;
  if (apiId !== undefined || apiKey !== undefined) return { apiId, apiKey };
  return request.legacyCredentials;
}

/**
 * The credentials exactly as the request sent them, one string: the Basic Authorization header,
 * or the API ID and key as a pair, however sent (a line break cannot occur in a header value), so
 * that one credential is one cache entry. Undefined when the request sends none of this kind.
 */
function presentedOf(request: FastifyRequest): string | undefined {
  const basic = basicOf(request);
  if (basic) return basic;
  const pair = pairOf(request);
  return pair && `${String(pair.apiId)}\n${String(pair.apiKey)}`;
}

/** The API ID and key of credentials presentedOf found; refuses a malformed pair or Basic text. */
function credentialsOf(request: FastifyRequest): { apiId: string; apiKey: string } {
  const basic = basicOf(request);
  if (basic) {
    const decoded = basicText(basic.slice(6).trim());
    const colon = decoded.indexOf(':');
    if (colon < 1)
      throw new UnauthorizedError(
        'HTTP Basic credentials must be the API ID and the API key joined by a colon, API_ID:API_KEY, base64-encoded (curl -u API_ID:API_KEY does this).',
      );
    return { apiId: decoded.slice(0, colon), apiKey: decoded.slice(colon + 1) };
  }
  const { apiId, apiKey } = pairOf(request) ?? {};
  if (typeof apiId !== 'string' || typeof apiKey !== 'string' || !apiId || !apiKey) {
    throw new UnauthorizedError('Send the API ID and the API key, once each: apiID and apiKey (or X-Api-Id and X-Api-Key).');
  }
  return { apiId, apiKey };
}

/**
 * API ID and key authentication; `cache` holds the principals proved (none: every request reads
 * and checks); `queryCredentials` accepts apiID and apiKey in the query string (LEGACY_QUERY_CREDENTIALS).
 */
export function apiKeyAuth(db: DbHandle, cache: PrincipalCache | undefined, queryCredentials = true): AuthMethod {
  /** The cache's key for credentials as sent: their SHA-256, computed once a tick (principal-cache.ts). */
  const keyOf = memoisePerTick((presented) => `key:${sha256(presented)}`);
  /** The principal of a credential as read, once the key sent matches it; at once unless its last use is due to be written. */
  const principalFor = (credential: CredentialRow | undefined, apiKey: string): MaybePromise<Principal> => {
    if (!credential || credential.revoked_at || !sameHash(credential.key_hash, sha256(apiKey))) {
      throw new UnauthorizedError(
        'The API ID and API key do not match an active credential: check that both are copied whole, or create a new credential (console, or cms apikey create) if this one was revoked.',
      );
    }
    const principal: Principal = {
      siteId: credential.site_id,
      scopes: scopesOf(credential.scopes),
      method: 'api-key',
      subject: credential.api_id,
      ...(credential.default_page === null ? {} : { defaultPage: credential.default_page }),
    };
    return afterLastUse(principal, credential.last_used_at, new Date(), (at) => touchCredential(db, credential.api_id, at));
  };
  const verify = (request: FastifyRequest): MaybePromise<Principal> => {
    const sent = credentialsOf(request);
    return andThen(readCredential(db, sent.apiId), (found) => principalFor(found, sent.apiKey));
  };
  return {
    name: 'api-key',
    authenticate(request) {
      request.legacyCredentials ??= takeFromQuery(request, queryCredentials);
      const presented = presentedOf(request);
      if (presented === undefined) return undefined;
      // The principal these exact credentials proved, kept per process by their hash until the
      // database says a credential changed (principal-cache.ts): decoding them, reading the
      // credential and checking the key against its hash cost a sixth of a GET by id.
      // Credentials that fail are never kept: each attempt is checked again.
      return cache ? cache.read(keyOf(presented), () => verify(request)) : verify(request);
    },
  };
}

/**
 * The text of an HTTP Basic credential. Standard base64 of ASCII text, what every client sends,
 * is read with atob: Buffer.from makes a Buffer on every request, a measurable part of a GET by id
 * under load (bench/README.md). Since the principal cache holds principals, an API-key request
 * decodes only when its credentials are not kept; the token endpoint's client limit decodes on
 * every token request. Anything else (base64url letters, stray characters, UTF-8 text) is read by
 * Buffer.from's lenient decoding, as every header always was.
 */
export function basicText(encoded: string): string {
  try {
    const text = atob(encoded);
    if (!NOT_ASCII.test(text)) return text;
  } catch {
    // Not standard base64: Buffer.from below reads it as it always did.
  }
  return Buffer.from(encoded, 'base64').toString('utf8');
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range, written out
const NOT_ASCII = /[^\x00-\x7f]/;
