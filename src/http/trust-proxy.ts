import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { TrustProxy } from '../config.js';
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
 * The same hook refuses an HTTP/1.1 request without `Host` (RFC 9112 §3.2), which Node's own check
 * (turned off: `http.requireHostHeader`, app.ts) answered with an empty 400 instead of a problem.
 */
export function installRequestHeaders(app: FastifyInstance): void {
  // Callback style, as every hook that runs on each request and awaits nothing: an async hook
  // costs a promise and a microtask per request (issue 11).
  app.addHook('onRequest', (request, _reply, done) => {
    const headers = request.raw.headers;
    if (headers.host === undefined && request.raw.httpVersion === '1.1') {
      return done(new BadRequestError('An HTTP/1.1 request must have a Host header.'));
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
