import type { FastifyReply, FastifyRequest } from 'fastify';

/** The names by which a browser on the service's own machine reaches it. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Where a browser page of the OAuth flow (/try, /docs) must be opened instead, when it was opened
 * at another loopback name of the same port than PUBLIC_URL's (127.0.0.1 for localhost, say):
 * the flow returns to PUBLIC_URL, and the browser keeps the PKCE verifier and the session per
 * origin, so a flow begun at the other name could never finish. Only loopback names are
 * rewritten: behind a proxy that passes its own Host, a redirect to PUBLIC_URL would come back
 * with the same Host and loop, and another machine's name for this one is not ours to change.
 */
function publicAddressFor(publicUrl: string, request: FastifyRequest): string | undefined {
  const publicAddress = new URL(publicUrl);
  if (!LOOPBACK.has(publicAddress.hostname)) return undefined;
  let asked: URL;
  try {
    asked = new URL(`${publicAddress.protocol}//${request.host}`);
  } catch {
    return undefined;
  }
  if (asked.host === publicAddress.host || !LOOPBACK.has(asked.hostname) || asked.port !== publicAddress.port) return undefined;
  return `${publicAddress.origin}${request.url}`;
}

/** An onRequest hook that sends a page opened at another loopback name to PUBLIC_URL (above). */
export function toPublicAddress(publicUrl: string) {
  return (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const target = request.method === 'GET' || request.method === 'HEAD' ? publicAddressFor(publicUrl, request) : undefined;
    if (target) void reply.redirect(target, 302);
    else done();
  };
}
