import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { basicText } from '../../auth/api-key.js';
import { BadRequestError } from '../../errors.js';
import type { RateLimitStore } from '../../http/rate-limit.js';
import { type Counted, enforce, RATE_WINDOW_SECONDS } from '../../http/rate-limit.js';

/** Dynamic registrations allowed per IP address and hour (RFC 7591 §5 asks for a gate). */
const REGISTRATIONS_PER_HOUR = 20;
const HOUR = 3600;

/** oidc-provider's own limit for a form body (lib/shared/selective_body.js): it refuses more. */
const PROVIDER_BODY_LIMIT = 56 * 1024;

/**
 * What the provider is handed: the request, or a stand-in whose body is the bytes already read
 * followed by the rest of the original stream. The stand-in carries the fields Koa and
 * oidc-provider read from a request (headers, method, url, socket, HTTP version).
 */
export type ProviderRequest = IncomingMessage & { originalUrl?: string };

interface ClientRequest {
  /** The client_id the request names, if it names one. */
  readonly clientId: string | undefined;
  readonly raw: ProviderRequest;
}

/** RFC 6749 §2.3.1: HTTP Basic client authentication, the client id form-encoded as the user name. */
function basicClientId(header: string | undefined): string | undefined {
  if (!header || !/^basic /i.test(header)) return undefined;
  const decoded = basicText(header.slice(6).trim());
  const colon = decoded.indexOf(':');
  try {
    return decodeURIComponent((colon < 0 ? decoded : decoded.slice(0, colon)).replace(/\+/g, ' ')) || undefined;
  } catch {
    return undefined;
  }
}

/**
 * The client of a token or revocation request, without taking the body from the provider. The
 * provider parses the form itself, from the stream, so the form is read here (up to the
 * provider's own limit), its client_id taken, and the provider handed a request whose stream
 * yields the same bytes. A body that is not a form, or too large, is passed on unread or as far
 * as it was read, and the provider refuses it exactly as before.
 */
export async function clientOf(request: FastifyRequest): Promise<ClientRequest> {
  const raw = request.raw;
  const fromHeader = basicClientId(request.headers.authorization);
  if (!/^application\/x-www-form-urlencoded\b/i.test(request.headers['content-type'] ?? '')) {
    return { clientId: fromHeader, raw };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let complete = true;
  try {
    // destroyOnReturn false: stopping early must leave the stream (and its socket) to the provider.
    for await (const chunk of raw.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size > PROVIDER_BODY_LIMIT) {
        complete = false;
        break;
      }
    }
  } catch {
    throw new BadRequestError('The request body could not be read to its end.');
  }
  const fromBody = complete ? new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('client_id') || undefined : undefined;
  const rest = complete ? [] : raw.iterator({ destroyOnReturn: false });
  const body = Readable.from(
    (async function* () {
      yield* chunks;
      yield* rest;
    })(),
    { objectMode: false },
  );
  const { headers, rawHeaders, method, url, socket, httpVersion, httpVersionMajor, httpVersionMinor } = raw;
  const standIn = Object.assign(body, { headers, rawHeaders, method, url, socket, httpVersion, httpVersionMajor, httpVersionMinor });
  return { clientId: fromBody ?? fromHeader, raw: standIn as unknown as ProviderRequest };
}

/**
 * RATE_LIMIT_TOKEN on the token, revocation and registration endpoints: one count per client and
 * one per IP address, both must pass (a runaway client on many addresses, or one address cycling
 * through clients). Registration names no client yet; it keeps, besides, its own hourly count
 * per address, since each registration stores a client for good.
 */
export async function limitTokenEndpoint(
  request: FastifyRequest,
  reply: FastifyReply,
  options: { store: RateLimitStore; shared: RateLimitStore; perMinute: number; clientId?: string | undefined; registration?: boolean },
): Promise<void> {
  const { store, perMinute, clientId } = options;
  const counts: Array<Promise<Counted>> = [];
  const count = async (s: RateLimitStore, policy: string, key: string, quota: number, windowSeconds: number): Promise<Counted> => ({
    policy,
    quota,
    windowSeconds,
    hit: await s.hit(key, windowSeconds, quota),
  });
  if (perMinute > 0) {
    if (clientId !== undefined) counts.push(count(store, 'token-client', `token:client:${clientId}`, perMinute, RATE_WINDOW_SECONDS));
    counts.push(count(store, 'token-ip', `token:ip:${request.ip}`, perMinute, RATE_WINDOW_SECONDS));
  }
  if (options.registration) counts.push(count(options.shared, 'registration', `register:${request.ip}`, REGISTRATIONS_PER_HOUR, HOUR));
  if (counts.length === 0) return;
  const counted = await Promise.all(counts);
  enforce(reply, counted, (c) => (c.policy === 'token-client' ? 'This client' : 'This address'));
}
