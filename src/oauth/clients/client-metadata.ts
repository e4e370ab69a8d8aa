import { type Configuration, errors, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../../config.js';
import { type OutboundFetch, outboundFetch } from '../../http/outbound.js';
import type { RateLimitStore } from '../../http/rate-limit.js';
import { type ApplicationType, clientNameProblem, redirectUriProblem } from './client.service.js';

/** oidc-provider's own limit for a document (fetchResponseBodyLimits); the guard stops reading there too. */
const DOCUMENT_MAX_BYTES = 5 * 1024;
/** New documents one address may make the server fetch per minute. */
export const DOCUMENT_FETCHES_PER_MINUTE = 10;
/** How long a document that could not be used is not fetched again. */
const FAILURE_SECONDS = 30;
/** URLs remembered as failed at most; the oldest is forgotten first. */
const MAX_FAILURES = 1000;

/**
 * URLs whose document failed (no answer, not a 200, too large, not a valid document), remembered
 * briefly so that repeated requests do not fetch from a failing or hostile host again and again.
 */
export class FailedDocuments {
  readonly #until = new Map<string, number>();
  constructor(
    private readonly seconds = FAILURE_SECONDS,
    private readonly max = MAX_FAILURES,
  ) {}

  add(url: string): void {
    this.#until.delete(url);
    if (this.#until.size >= this.max) {
      const now = Date.now();
      for (const [key, until] of this.#until) if (until <= now) this.#until.delete(key);
      // Insertion order is expiry order: the first is the oldest.
      for (const key of this.#until.keys()) {
        if (this.#until.size < this.max) break;
        this.#until.delete(key);
      }
    }
    this.#until.set(url, Date.now() + this.seconds * 1000);
  }

  /** Seconds until the URL may be fetched again; 0 if it has not failed lately. */
  secondsLeft(url: string): number {
    const until = this.#until.get(url);
    if (until === undefined) return 0;
    const left = until - Date.now();
    if (left > 0) return Math.ceil(left / 1000);
    this.#until.delete(url);
    return 0;
  }
}

/** What one provider request did about each document it asked for: fetched it, or was refused (kept to answer the same again). */
type Outcomes = Map<string, 'fetched' | Error>;
const OUTCOMES = 'clientMetadataDocuments';

function outcomesOf(ctx: KoaContextWithOIDC): Outcomes {
  const state = ctx.state as Record<string, Outcomes | undefined>;
  state[OUTCOMES] ??= new Map();
  return state[OUTCOMES];
}

interface MetadataDocumentDeps {
  /** Counts the fetches per address of the request that caused them. */
  readonly limits: RateLimitStore;
  /** The guarded fetch; built from the configuration unless given. */
  readonly fetch?: OutboundFetch;
  readonly failures?: FailedDocuments;
}

/**
 * The outbound guard for documents. Tests only: `tests.ca` is a certificate authority trusted besides
 * the system's, and loopback addresses (the tests' servers), refused otherwise, are reached; every
 * other rule of the guard still applies. `tests.timeoutMs` replaces the limit on a whole fetch, so
 * that a test of a document that never comes ends sooner.
 */
export function metadataDocumentFetch(tests?: { readonly ca: string; readonly timeoutMs?: number }): OutboundFetch {
  return outboundFetch({
    maxBytes: DOCUMENT_MAX_BYTES,
    ...(tests ? { testHooks: { ca: tests.ca, loopback: true } } : {}),
    ...(tests?.timeoutMs ? { timeoutMs: tests.timeoutMs } : {}),
  });
}

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client whose
 * client_id is an https URL is described by the JSON document at that URL. oidc-provider fetches
 * it, checks that the document's client_id is its URL and that it has no secret, and builds the
 * client from it; its redirect URIs and name must also pass the rules every client follows.
 * Documents are cached per process for 30 s to 5 min (their Cache-Control within that range), so
 * a changed document reaches every node within 5 minutes.
 *
 * Anyone can make the server fetch a URL by naming it as client_id, so:
 * - every fetch goes through the outbound guard (src/http/outbound.ts): public addresses only,
 *   one DNS resolution, no redirects, 5 KiB, 2.5 s (oidc-provider's own abort signal);
 * - an address may cause DOCUMENT_FETCHES_PER_MINUTE fetches a minute (the perRequest counters:
 *   Redis, else this process). The consent step looks the client up outside a provider request,
 *   for a signed-in owner, and is not counted;
 * - a document that failed is not fetched again for FAILURE_SECONDS, by this process.
 */
export function clientMetadataDocuments(
  config: Config,
  { limits, fetch = metadataDocumentFetch(), failures = new FailedDocuments() }: MetadataDocumentDeps,
): Pick<Configuration, 'fetch'> & {
  feature: NonNullable<Configuration['features']>['clientIdMetadataDocument'];
} {
  return {
    feature: {
      enabled: config.oauth.clientMetadataDocuments,
      ack: 'draft-02',
      allowFetch: async (context, clientId) => {
        // Undefined outside a provider request (the consent step).
        const ctx = context as KoaContextWithOIDC | undefined;
        const outcomes = ctx ? outcomesOf(ctx) : undefined;
        const earlier = outcomes?.get(clientId);
        if (earlier instanceof Error) throw earlier;
        // Asked again in the same request (the authorization error handler looks the client up once
        // more): the fetch gave no client, so the document failed, whatever oidc-provider found wrong.
        if (earlier === 'fetched') failures.add(clientId);
        const wait = failures.secondsLeft(clientId);
        if (wait > 0) {
          throw new errors.InvalidClient(`the client_id metadata document could not be used; it is not fetched again for ${wait} seconds`);
        }
        if (ctx && outcomes) {
          const hit = await limits.hit(`metadata-document:ip:${ctx.ip}`, 60, DOCUMENT_FETCHES_PER_MINUTE);
          if (hit.count > DOCUMENT_FETCHES_PER_MINUTE) {
            const refusal = new errors.TemporarilyUnavailable(
              `this address asked for more than ${DOCUMENT_FETCHES_PER_MINUTE} new client_id metadata documents in a minute; try again in ${hit.retryAfter} seconds`,
            );
            outcomes.set(clientId, refusal);
            throw refusal;
          }
          outcomes.set(clientId, 'fetched');
        }
        return true;
      },
      allowClient: async (_ctx, client) => {
        const type: ApplicationType = client.applicationType === 'native' ? 'native' : 'web';
        const uris = client.redirectUris ?? [];
        const name = typeof client.clientName === 'string' ? client.clientName.trim() : '';
        if (name && clientNameProblem(name)) return false;
        return uris.length > 0 && uris.every((uri) => !redirectUriProblem(uri, type));
      },
      cacheDuration: { min: 30, max: 300 },
    },
    // Every fetch of the provider; with clientAuthMethods 'none' and no request objects it fetches nothing but documents.
    fetch: async (url, options = {}) => {
      const href = String(url);
      try {
        const headers = Object.fromEntries(new Headers(options.headers as ConstructorParameters<typeof Headers>[0]).entries());
        const response = await fetch(href, { method: options.method ?? 'GET', headers, signal: options.signal ?? null });
        if (response.status !== 200) failures.add(href);
        return response;
      } catch (error) {
        failures.add(href);
        throw error;
      }
    },
  };
}

/** Whether a client_id names a metadata document (generated ids never start with https://). */
export function isMetadataDocumentClientId(clientId: string): boolean {
  return clientId.startsWith('https://');
}
