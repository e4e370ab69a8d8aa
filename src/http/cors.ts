import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CorsOrigins } from '../address-settings.js';
import { pathOf, RouteMethods } from './route-methods.js';

/**
 * What a browser app may send: credentials in every form the API takes (Bearer, HTTP Basic, the
 * apiID/apiKey and X-Api-Id/X-Api-Key pairs), JSON bodies, conditional requests, and the headers
 * of the MCP Streamable HTTP transport.
 */
const ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'If-Match',
  'If-None-Match',
  'apiID',
  'apiKey',
  'X-Api-Id',
  'X-Api-Key',
  'Mcp-Session-Id',
  'Mcp-Protocol-Version',
  'Last-Event-ID',
].join(', ');

/**
 * What a browser app may read besides the CORS-safelisted headers: the entity tag it sends back
 * in If-Match, where a created record is, the rate limit and when to retry, and which credentials
 * a 401 wants. Sent on errors too: a 401 or a 429 is when an app needs them most.
 */
const EXPOSED_HEADERS = ['ETag', 'Location', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'WWW-Authenticate'].join(', ');

/** How long a browser may reuse a preflight's answer (Chromium caps it at two hours). */
const PREFLIGHT_MAX_AGE_SECONDS = '7200';

/** The OAuth endpoints a browser app calls itself; the rest of /api/auth are pages it navigates to. */
const AUTH_ENDPOINTS = new Set([
  '/api/auth/token',
  '/api/auth/revoke',
  '/api/auth/reg',
  '/api/auth/.well-known/oauth-authorization-server',
]);

const CROSS_ORIGIN =
  /^\/(?:(?:webapps\/)?api(?:\/|$)|images\/|mcp$|\.well-known\/oauth-protected-resource(?:\/mcp)?$|\.well-known\/oauth-authorization-server\/api\/auth$)/;

/**
 * Whether a path (or a route's pattern) answers browser apps on other origins: both API prefixes,
 * the MCP server, the token, revocation and registration endpoints, the metadata documents, and
 * the uploaded images (an `<img>` needs no CORS, but an app that fetches an image's bytes, or
 * draws it on a canvas it then reads, does).
 * The HTML pages (the console, /api/auth/authorize and its interaction pages, /, /try, /docs) do
 * not: a page read cross-origin would hand its CSRF token and the signed-in owner's data to any
 * site, and none of them is an API.
 */
export function answersOtherOrigins(path: string): boolean {
  if (path === '/api/auth' || path.startsWith('/api/auth/')) return AUTH_ENDPOINTS.has(path);
  return CROSS_ORIGIN.test(path);
}

/** Whether CORS_ORIGINS lets a page of `origin` read the answers; with a list, a request without Origin is not let. */
export function corsOriginAllowed(origins: CorsOrigins, origin: string | undefined): boolean {
  return origins === '*' || (origin !== undefined && origins.includes(origin));
}

function isPreflight(request: FastifyRequest): boolean {
  return (
    request.method === 'OPTIONS' && request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined
  );
}

/**
 * The response's CORS headers for this request's origin; a page of another origin reads nothing
 * without them. Access-Control-Allow-Credentials is never sent: browser apps authenticate with
 * an Authorization header they set themselves, never with cookies, so no other site can make a
 * signed-in owner's browser send the owner's console session to the API.
 */
function allowOrigin(reply: FastifyReply, origins: CorsOrigins, origin: string | undefined): boolean {
  // With a list the answer depends on Origin: a cache must not hand one origin's answer to another.
  if (origins !== '*') reply.header('vary', 'Origin');
  if (!corsOriginAllowed(origins, origin)) return false;
  // `*` needs no Vary, and a cache can share the answer between origins.
  reply.header('access-control-allow-origin', origins === '*' ? '*' : (origin as string));
  return true;
}

/**
 * CORS for browser apps on other origins (CORS_ORIGINS), on the paths answersOtherOrigins names:
 * a preflight is answered here, with the methods of the path; every other answer, errors
 * included, gets Allow-Origin and Expose-Headers before anything else runs. The answers the
 * OAuth provider writes itself carry these headers too (they are on the reply when it is handed
 * over), and oidc-provider then adds none of its own. Install before any route is added.
 */
export function installCors(app: FastifyInstance, origins: CorsOrigins): void {
  // A preflight is an OPTIONS request, so the router cannot say which route the real request
  // will reach: its path is matched against the cross-origin routes' patterns instead.
  const routes = new RouteMethods();
  app.addHook('onRoute', (route) => {
    if (answersOtherOrigins(route.url)) routes.add(route);
  });

  app.addHook('onRequest', (request, reply, done) => {
    if (isPreflight(request)) {
      const methods = routes.of(pathOf(request.url));
      // Not a cross-origin path (or no such route): the preflight gets what any OPTIONS gets.
      if (!methods.length) return done();
      if (allowOrigin(reply, origins, request.headers.origin)) {
        reply
          .header('access-control-allow-methods', methods.join(', '))
          .header('access-control-allow-headers', ALLOWED_HEADERS)
          .header('access-control-max-age', PREFLIGHT_MAX_AGE_SECONDS);
      }
      // Answering from the hook: done() is not called, so neither authentication nor the route runs.
      reply.code(204).send();
      return;
    }
    exposeToOtherOrigins(request, reply, origins);
    done();
  });
}

/**
 * An answer's CORS headers (Allow-Origin, Expose-Headers) when its path answers other origins:
 * set by installCors's hook, and by the answers to requests the router refuses before any hook
 * runs (problem.ts, frameworkErrorAnswer).
 */
export function exposeToOtherOrigins(request: FastifyRequest, reply: FastifyReply, origins: CorsOrigins): void {
  // The route's pattern when there is one: a path that reaches the provider's /api/auth/* pages
  // by another spelling is still one of its pages.
  if (answersOtherOrigins(request.routeOptions.url ?? pathOf(request.url))) {
    if (allowOrigin(reply, origins, request.headers.origin)) reply.header('access-control-expose-headers', EXPOSED_HEADERS);
  }
}
