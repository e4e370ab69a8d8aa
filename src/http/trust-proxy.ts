import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { TrustProxy } from '../address-settings.js';
import { BadRequestError } from '../errors.js';

/**
 * TRUST_PROXY as Fastify's `trustProxy`. A hop count is given as a function: Fastify (5.12)
 * trusts no X-Forwarded-Proto/-Host for a bare number, while `i < hops` believes the proto and
 * host the nearest proxy sent, and `hops` addresses of X-Forwarded-For counted from the socket.
 */
export function trustProxyOption(trust: TrustProxy): FastifyServerOptions['trustProxy'] {
  if (trust === false) return false;
  if (typeof trust === 'number') return (_address: string, hop: number) => hop < trust;
  return [...trust];
}

const FORWARDED = ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'] as const;

/**
 * The authorization server (Koa inside oidc-provider) reads X-Forwarded-* itself, believing the
 * first value whoever sent it. Replacing them with what Fastify concluded from the trusted hops
 * alone gives both one answer: a client cannot make its cookies Secure-less, its address another.
 * Requests without these headers are left alone (the socket already says everything).
 *
 * The same hook keeps the request's framing honest:
 * - an HTTP/1.1 request without `Host`, or any request with more than one, is a 400 (RFC 9112
 *   §3.2). Node's own check (turned off: `http.requireHostHeader`, app.ts) answered an empty 400,
 *   and Node keeps the first of two Host headers, which a proxy may have read differently;
 * - an answer sent before the request's body was read to its end (a refusal by its headers, a
 *   body over a limit) closes the connection. Kept alive, Node would read the rest of the declared
 *   body before the next request, and a client that stopped sending it would wait for good.
 */
export function installRequestHeaders(app: FastifyInstance): void {
  // Callback style, as every hook that runs on each request and awaits nothing: an async hook
  // costs a promise and a microtask per request.
  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw;
    const headers = raw.headers;
    if (headers.host === undefined && raw.httpVersion === '1.1') {
      return done(new BadRequestError('An HTTP/1.1 request must have a Host header.'));
    }
    if (hostHeaders(raw.rawHeaders) > 1) return done(new BadRequestError('A request must have one Host header, not several.'));
    if (headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0')) {
      closeIfAnsweredEarly(raw, reply.raw);
    }
    if (FORWARDED.some((name) => headers[name] !== undefined)) {
      const { ip, protocol, host } = request;
      headers['x-forwarded-for'] = ip;
      headers['x-forwarded-proto'] = protocol;
      headers['x-forwarded-host'] = host;
    }
    done();
  });
}

function hostHeaders(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') count += 1;
  }
  return count;
}

/**
 * Every answer goes out through writeHead (Fastify calls it, and Node's implicit headers do for
 * the authorization server's Koa), so that is where the body's state is known at the right time.
 */
function closeIfAnsweredEarly(request: IncomingMessage, response: ServerResponse): void {
  const writeHead = response.writeHead;
  response.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    if (!request.complete && !this.headersSent) this.setHeader('connection', 'close');
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as ServerResponse['writeHead'];
}
