import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import type { Config } from '../config.js';
import { mediaRanges } from '../http/accept.js';
import { addVary } from '../http/representation.js';
import { DEMO_CLIENT_ID } from '../oauth/clients/client.service.js';
import { toPublicAddress } from '../web/public-address.js';
import { openapiOptions } from './openapi.document.js';
import { buildReference, type EndpointReference, type RouteInfo, renderMarkdown } from './reference.js';

const ALIAS = /^\/webapps(?=\/api\/)/;

/** The endpoint a route belongs to: its path with the /webapps alias folded into /api. */
function endpointOf(url: string): string {
  return url.replace(ALIAS, '');
}

/** Routes by endpoint, collected as they are registered; references are built on first use. */
class ReferenceRegistry {
  readonly routes = new Map<string, RouteInfo[]>();
  /** Endpoints also served under the /webapps alias. */
  readonly aliased = new Set<string>();
  private readonly built = new Map<string, EndpointReference>();

  get(endpoint: string): EndpointReference | undefined {
    const cached = this.built.get(endpoint);
    if (cached) return cached;
    const routes = this.routes.get(endpoint);
    if (!routes) return undefined;
    const reference = buildReference(endpoint, routes, this.aliased.has(endpoint));
    this.built.set(endpoint, reference);
    return reference;
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    references: ReferenceRegistry;
  }
}

/** The JSON reference of the endpoint a request was routed to, if it has one. */
function referenceFor(request: FastifyRequest): EndpointReference | undefined {
  const url = request.routeOptions.url;
  return url ? request.server.references?.get(endpointOf(url)) : undefined;
}

/**
 * Whether the client asks for Markdown rather than JSON (by order of preference and q-values). A
 * range with q=0 is one the client refuses (RFC 9110 §12.4.2), so it is never the best.
 */
function prefersMarkdown(accept: string | undefined): boolean {
  if (!accept?.includes('text/markdown')) return false;
  let best = '';
  let bestQ = 0;
  for (const { type, q } of mediaRanges(accept)) {
    if (q > bestQ && ['text/markdown', 'application/json', '*/*', 'application/*'].includes(type)) {
      best = type;
      bestQ = q;
    }
  }
  return best === 'text/markdown';
}

/**
 * The reference a 401 carries: only for a client that asks for JSON by name (the spec serves the
 * reference at the endpoint's URL to Accept: application/json), so every other anonymous request,
 * a probe or a browser that accepts anything through a wildcard, gets a small answer.
 */
export function referenceForUnauthorized(request: FastifyRequest): EndpointReference | undefined {
  const asked = mediaRanges(request.headers.accept).some((r) => r.type === 'application/json' && r.q !== 0);
  return asked ? referenceFor(request) : undefined;
}

/**
 * The references (Markdown and OpenAPI) are public and change only with the service's version:
 * any cache may keep them, and asks before each use (a 304 by their ETag), so an upgrade's
 * reference is seen at once rather than after a heuristic freshness chosen by the cache.
 */
const REFERENCE_CACHING = 'no-cache';

const NO_CLIENT_SECRET_CSS = '.auth-container .wrapper:has(> label[for^="client_secret_"]) { display: none; }\n';

/**
 * Endpoint references (Markdown and JSON) and the OpenAPI document, all built from the route
 * schemas, so they cannot disagree with what the routes validate and send.
 */
export async function registerReference(app: FastifyInstance, config: Config): Promise<void> {
  const registry = new ReferenceRegistry();
  app.decorate('references', registry);
  const routes = registry.routes;
  // The routes, as registered (the /webapps alias included), whose GET and HEAD answer JSON or the Markdown reference.
  const negotiated = new Set<string>();
  app.addHook('onRoute', (route: RouteOptions) => {
    const schema = route.schema as RouteInfo['schema'] | undefined;
    if (!schema?.summary || !route.url.includes('/api/')) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.includes('GET') || methods.includes('HEAD')) negotiated.add(route.url);
    const endpoint = endpointOf(route.url);
    if (endpoint !== route.url) registry.aliased.add(endpoint);
    const list = routes.get(endpoint) ?? [];
    for (const method of methods) {
      if (method === 'HEAD' || list.some((r) => r.method === method && r.url === endpoint)) continue;
      list.push({ method, url: endpoint, schema, scope: route.config?.scope });
    }
    routes.set(endpoint, list);
  });

  // Runs before authentication: the Markdown reference is public. Such a route chooses between JSON
  // and Markdown by Accept, so every answer it gives (JSON, Markdown, 304, 401, 404…) carries
  // Vary: Accept, merged with a Vary set before (CORS's Origin): a cache that keyed it on the URL
  // alone would hand the Markdown to a JSON client, or the reverse. A HEAD is answered as its GET
  // would be, Markdown included, without the body (Fastify drops it and keeps its length).
  app.addHook('onRequest', (request, reply, done) => {
    const method = request.method;
    if ((method !== 'GET' && method !== 'HEAD') || !negotiated.has(request.routeOptions.url ?? '')) return done();
    addVary(reply, 'accept');
    const reference = prefersMarkdown(request.headers.accept) ? referenceFor(request) : undefined;
    // Answering from the hook: done() is not called, so the route does not run.
    if (reference) {
      reply
        .type('text/markdown; charset=utf-8')
        .header('cache-control', REFERENCE_CACHING)
        .send(renderMarkdown(reference, config.publicUrl));
    } else done();
  });

  await app.register(swagger, openapiOptions(config));
  const atPublicAddress = toPublicAddress(config.publicUrl);
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true },
    // Authorize runs what every client here runs: authorization code with PKCE, as a public client
    // (the demo client's id filled in when there is one), for the content API as the resource. The
    // token request carries resource in its query string, which oidc-provider does not read; the
    // grant's one resource is used instead (useGrantedResource). The redirect URI is swagger-ui's
    // callback page, /docs/static/oauth2-redirect.html (DOCS_REDIRECT_PATH).
    initOAuth: {
      ...(config.demo ? { clientId: DEMO_CLIENT_ID } : {}),
      usePkceWithAuthorizationCodeGrant: true,
      additionalQueryStringParams: { resource: config.publicUrl },
      scopes: 'everything:read',
    },
    // swagger-ui shows a client_secret field in every authorization code dialog; no client here
    // has a secret, and one typed in would only be refused, so the field is not displayed.
    theme: { css: [{ filename: 'public-clients.css', content: NO_CLIENT_SECRET_CSS }] },
    // The same rules as the other HTML pages: the page's credentials dialog must not be framed and
    // overlaid, and it runs only its own files (swagger-ui's scripts are all files, none inline).
    // Its styles are its own files too, but it sets style attributes as it renders.
    staticCSP: [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "connect-src 'self'",
      "font-src 'self' data:",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
    uiHooks: {
      onRequest: (request, reply, done) => {
        reply.header('x-frame-options', 'DENY').header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
        atPublicAddress(request, reply, done);
      },
    },
  });
  app.get('/api/openapi.json', { schema: { hide: true }, config: { public: true } }, async (_request, reply) => {
    reply.header('cache-control', REFERENCE_CACHING);
    return app.swagger();
  });
}
