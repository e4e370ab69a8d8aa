import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ForbiddenError, UnauthorizedError } from '../errors.js';
import { formTypeOf } from '../http/url-encoded.js';
import { andThen, type MaybePromise } from '../maybe-async.js';
import type { LegacyCredentials } from './api-key.js';
import type { AuthMethod, Principal } from './principal.js';
import { protectedResources, type ResourceName } from './resources.js';
import { meetsNeed, type ScopeNeed, scopeText } from './scopes.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | undefined;
    /**
     * Set when the request sent no credentials in its headers or query and its form body may hold
     * them (a route with `config.formCredentials`): the route's form reader calls it with the
     * apiID and apiKey fields before it reads anything else of the form.
     */
    authenticateForm: ((fields: LegacyCredentials) => MaybePromise<void>) | undefined;
    /**
     * Proves the request's credentials again, now, as the hook did when the request came in: a 401
     * (or 403) when they have since been revoked, expired or lost the scope. For an answer that is
     * held (a long-poll): what changed after its credentials ended is not theirs to see.
     */
    authenticateAgain(): MaybePromise<void>;
  }
  interface FastifyContextConfig {
    /**
     * The scope a route needs (or, as a list, any one of them): the route authenticates, and
     * refuses callers without it (scopes.ts says which scopes carry which).
     */
    scope?: ScopeNeed;
    /** Declares a route open to anyone. Every route under /api needs this or a scope. */
    public?: true;
    /**
     * The protected resource a scoped route belongs to: the content API (default), or the MCP
     * server, which takes only Bearer tokens issued for {base_url}/mcp.
     */
    resource?: ResourceName;
    /**
     * The route reads a urlencoded or multipart body and accepts API credentials as its apiID and
     * apiKey fields, as the hosted platform's clients send them: authentication waits for the form.
     */
    formCredentials?: true;
  }
}

function resourceOf(request: FastifyRequest): ResourceName {
  return request.routeOptions.config?.resource ?? 'api';
}

/**
 * The WWW-Authenticate challenge of a 401 or 403: it names the metadata (RFC 9728) of the
 * resource the route belongs to, so an MCP client discovers the MCP resource, not the REST one.
 * Only the REST API also takes HTTP Basic API credentials.
 */
export function challengeFor(publicUrl: string) {
  const resources = protectedResources(publicUrl);
  return (error: UnauthorizedError | ForbiddenError, request: FastifyRequest): string => {
    const resource = resourceOf(request);
    const realm = resource === 'mcp' ? 'content-mcp' : 'content-api';
    const metadata = `resource_metadata="${publicUrl}${resources[resource].metadataPath}"`;
    if (error instanceof ForbiddenError) {
      return `Bearer realm="${realm}", error="insufficient_scope", scope="${error.requiredScope ?? ''}", ${metadata}`;
    }
    const bearer = error.bearerError
      ? `Bearer realm="${realm}", error="${error.bearerError}", ${metadata}`
      : `Bearer realm="${realm}", ${metadata}`;
    return resource === 'api' ? `${bearer}, Basic realm="content-api"` : bearer;
  };
}

const GUARDED = /^\/((webapps\/)?api|mcp)(\/|$)/;

/**
 * Refuses, at start-up, any route under /api, /webapps/api or /mcp that declares neither a scope
 * nor `public: true`: a route cannot forget its permission. Install it before any route is added.
 */
export function requireDeclaredAccess(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (!GUARDED.test(route.url) || route.config?.scope || route.config?.public) return;
    const methods = Array.isArray(route.method) ? route.method.join(',') : route.method;
    throw new Error(`${methods} ${route.url} declares neither config.scope nor config.public: say who may call it`);
  });
}

const MISSING_CREDENTIALS: Record<ResourceName, string> = {
  api: 'Send an OAuth access token (Authorization: Bearer) or API credentials (HTTP Basic API_ID:API_KEY, or the headers apiID and apiKey, or X-Api-Id and X-Api-Key).',
  mcp: 'Send an OAuth access token issued for this MCP server (Authorization: Bearer); the WWW-Authenticate header names its metadata.',
};

/**
 * The credential methods of one protected resource: the REST API takes its Bearer tokens and API
 * keys, the MCP server its tokens only. The request's Authorization scheme picks the method, so a
 * request runs the code of one method only.
 */
interface ResourceMethods {
  readonly bearer: AuthMethod;
  readonly apiKey?: AuthMethod;
}

const BEARER = /^bearer /i;

/**
 * An answer to credentials belongs to their website: no shared cache may keep it, and a client's
 * own cache revalidates it (by its ETag, a 304) before each use. Authorization alone would keep it
 * from shared caches (RFC 9111 §3.5), but X-Api-Key, apiKey and query credentials are not
 * Authorization, and two websites' /api/page/1 are one URL. Errors replace it with no-store.
 */
const PRIVATE = 'private, no-cache';

/**
 * `count`, when given, counts each authenticated request against its principal's rate limit, in
 * this same hook: a hook of its own cost more than the counting (bench:ratelimit).
 */
export type CountRequest = (request: FastifyRequest, reply: FastifyReply) => undefined | Promise<void>;

/**
 * Authenticates every route that declares `config.scope`, before its body is read, so an
 * unauthenticated upload is refused without being streamed.
 *
 * The hook is callback-style, not async, and the methods and the count answer at once when they
 * can: a request whose credential is kept is authenticated without a promise. Awaiting each step
 * cost about a quarter of a GET by id (bench/README.md).
 */
export function installAuthentication(
  app: FastifyInstance,
  methods: Readonly<Record<ResourceName, ResourceMethods>>,
  count?: CountRequest,
): void {
  app.decorateRequest('principal', undefined);
  app.decorateRequest('authenticateForm', undefined);
  app.decorateRequest('legacyCredentials', undefined);
  app.decorateRequest('authenticateAgain', function (this: FastifyRequest): MaybePromise<void> {
    const needed = this.routeOptions.config.scope;
    if (!needed) throw new Error(`route ${this.routeOptions.url} has no config.scope`);
    const resource = resourceOf(this);
    // The credentials as the request sent them (a form's were kept in legacyCredentials): the same
    // method reads them, through the principal cache, which a revocation has emptied.
    return andThen(principalFrom(methods[resource], this), (principal) => {
      this.principal = authorised(this, principal, needed, resource);
    });
  });
  app.addHook('onRequest', (request, reply, done) => {
    const needed = request.routeOptions.config.scope;
    if (!needed) return done();
    reply.header('cache-control', PRIVATE);
    const resource = resourceOf(request);
    const finish = (found: MaybePromise<Principal | undefined>) =>
      andThen(found, (principal) => {
        request.principal = authorised(request, principal, needed, resource);
        return count?.(request, reply);
      });
    let settled: MaybePromise<void>;
    try {
      const found = principalFrom(methods[resource], request);
      if (found === undefined && mayHoldFormCredentials(request)) {
        // Nothing in the headers or query: the form's fields are read before anything else of it.
        request.authenticateForm = (fields) => {
          request.authenticateForm = undefined;
          request.legacyCredentials = fields;
          return finish(principalFrom(methods[resource], request));
        };
        return done();
      }
      settled = finish(found);
    } catch (error) {
      return done(error as Error);
    }
    if (settled instanceof Promise) settled.then(() => done(), done);
    else done();
  });
}

function mayHoldFormCredentials(request: FastifyRequest): boolean {
  return request.routeOptions.config.formCredentials === true && formTypeOf(request.headers['content-type']) !== undefined;
}

/** The principal the request's credentials prove, by the method its Authorization scheme names; undefined when it sends none. */
function principalFrom(methods: ResourceMethods, request: FastifyRequest): MaybePromise<Principal | undefined> {
  const authorization = request.headers.authorization;
  if (authorization !== undefined && BEARER.test(authorization)) return methods.bearer.authenticate(request);
  return methods.apiKey?.authenticate(request);
}

/** The principal, once it is known to exist and to hold the scope the route needs. */
function authorised(request: FastifyRequest, principal: Principal | undefined, needed: ScopeNeed, resource: ResourceName): Principal {
  if (!principal) {
    throw BEARER.test(request.headers.authorization ?? '')
      ? new UnauthorizedError('The access token is not valid.', 'invalid_token')
      : new UnauthorizedError(MISSING_CREDENTIALS[resource]);
  }
  if (!meetsNeed(principal.scopes, needed)) throw insufficientScope('This operation', principal, needed);
  return principal;
}

/** The principal of an authenticated route; a route without `config.scope` has none. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error(`route ${request.routeOptions.url} has no config.scope`);
  return request.principal;
}

/**
 * The 403 of credentials that lack the scope `needed` (RFC 6750 §3.1): its challenge names the
 * scope, and its detail says how to get it, by the kind of credentials.
 */
export function insufficientScope(what: string, principal: Principal, needed: ScopeNeed): ForbiddenError {
  const scope = scopeText(needed);
  const named = typeof needed === 'string' ? `the scope ${scope}` : `one of the scopes ${scope}`;
  const detail =
    principal.method === 'api-key'
      ? `${what} needs ${named}, which this API credential was not given: create a credential with it (console, or cms apikey create --scope).`
      : `${what} needs ${named}, which this access token was not granted: authorize again asking for scope ${scope}.`;
  return new ForbiddenError(detail, scope);
}
