import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import { bearerAuth } from '../auth/bearer.js';
import type { AuthMethod } from '../auth/principal.js';
import type { PrincipalCache } from '../auth/principal-cache.js';
import { protectedResources, type ResourceName } from '../auth/resources.js';
import type { Config } from '../config.js';
import type { DbHandle } from '../db/schema.js';
import type { RateLimitStores } from '../http/configured-rate-limits.js';
import { purgeRateLimits } from '../http/database-rate-limits.js';
import type { OutboundFetch } from '../http/outbound.js';
import type { UpkeepTask } from '../upkeep.js';
import { registrationRequest } from './clients/registration.body.js';
import { dropUnfinishedConnections, expireLapsedConnections } from './connections/connection.service.js';
import { registerInteractions } from './interactions/interaction.routes.js';
import { clientOf, limitTokenEndpoint, type ProviderRequest } from './provider/endpoint-limits.js';
import { protectedResourceMetadata } from './provider/metadata.js';
import { purgeExpiredPayloads } from './provider/oauth.adapter.js';
import { AUTH_PATH, CODE_TTL_SECONDS, createProvider, INTERACTION_TTL_SECONDS, issuerOf } from './provider/provider.js';

interface OAuthServer {
  readonly provider: Provider;
  /** The Bearer AuthMethod of each protected resource: a token is accepted only by its own. */
  readonly bearer: Readonly<Record<ResourceName, AuthMethod>>;
  /** Registers the provider's endpoints, the interaction pages and the metadata documents. */
  register(app: FastifyInstance): Promise<void>;
  /** Its part of each node's upkeep: what has expired. */
  readonly upkeep: UpkeepTask;
}

/** Headers for every answer of the provider (its error page, its redirects). */
const PROVIDER_HEADERS = {
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "frame-ancestors 'none'",
};

export function createOAuthServer({
  config,
  db,
  log,
  limits,
  principals,
  metadataDocumentFetch,
}: {
  config: Config;
  db: DbHandle;
  log: FastifyBaseLogger;
  /** Where Bearer authentication keeps the principals tokens proved; none: every request reads its token. */
  principals: PrincipalCache | undefined;
  limits: RateLimitStores;
  /** The guarded fetch for Client ID Metadata Documents; the guard's defaults unless given (tests). */
  metadataDocumentFetch?: OutboundFetch | undefined;
}): OAuthServer {
  const provider = createProvider(config, db, log, limits.perRequest, metadataDocumentFetch);
  const resources = protectedResources(config.publicUrl);
  const callback = provider.callback();

  /**
   * Hands the raw request (or a stand-in for it, endpoint-limits.ts) to the provider, with the
   * URL it would see if mounted at /api/auth. Headers already on the reply go along: the
   * provider writes its answer straight to the socket.
   */
  function forward(
    request: FastifyRequest,
    reply: FastifyReply,
    url: string,
    originalUrl = request.raw.url,
    raw: ProviderRequest = request.raw,
  ) {
    reply.hijack();
    // oidc-provider works out its mount path from originalUrl minus url (oidc_context urlFor).
    raw.originalUrl = originalUrl;
    raw.url = url;
    reply.raw.setHeader('x-request-id', request.id);
    for (const [name, value] of Object.entries({ ...reply.getHeaders(), ...PROVIDER_HEADERS })) {
      if (value !== undefined) reply.raw.setHeader(name, value);
    }
    return callback(raw, reply.raw);
  }

  /** Token and revocation: counted per client and per address (RATE_LIMIT_TOKEN) first. */
  async function limitedForward(request: FastifyRequest, reply: FastifyReply, url: string) {
    if (config.rateLimits.token === 0) return forward(request, reply, url);
    const client = await clientOf(request);
    await limitTokenEndpoint(request, reply, {
      store: limits.perRequest,
      shared: limits.shared,
      perMinute: config.rateLimits.token,
      clientId: client.clientId,
    });
    return forward(request, reply, url, request.raw.url, client.raw);
  }

  async function register(app: FastifyInstance) {
    await app.register(async (scope) => {
      // The provider reads request bodies itself; Fastify must leave the stream alone.
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
      scope.all(`${AUTH_PATH}/*`, { schema: { hide: true }, config: { public: true } }, (request, reply) =>
        forward(request, reply, (request.raw.url ?? '').slice(AUTH_PATH.length) || '/'),
      );
      for (const endpoint of ['token', 'revoke']) {
        scope.post(`${AUTH_PATH}/${endpoint}`, { schema: { hide: true }, config: { public: true } }, (request, reply) =>
          limitedForward(request, reply, `/${endpoint}`),
        );
      }
      // Registration names no client yet: per address only, per minute and per hour.
      scope.post(`${AUTH_PATH}/reg`, { schema: { hide: true }, config: { public: true } }, async (request, reply) => {
        const perMinute = config.rateLimits.token;
        await limitTokenEndpoint(request, reply, { store: limits.perRequest, shared: limits.shared, perMinute, registration: true });
        return forward(request, reply, '/reg', request.raw.url, await registrationRequest(request.raw));
      });
      // A route of its own, not the catch-all's: it is one of the addresses browser apps read
      // cross-origin (src/http/cors.ts), with GET only.
      scope.get(
        `${AUTH_PATH}/.well-known/oauth-authorization-server`,
        { schema: { hide: true }, config: { public: true } },
        (request, reply) => forward(request, reply, '/.well-known/oauth-authorization-server'),
      );
      // RFC 8414 §3.1: the metadata of issuer {base}/api/auth is also at /.well-known/…/api/auth.
      scope.get(`/.well-known/oauth-authorization-server${AUTH_PATH}`, { schema: { hide: true } }, (request, reply) =>
        forward(request, reply, '/.well-known/oauth-authorization-server', `${AUTH_PATH}/.well-known/oauth-authorization-server`),
      );
    });

    await registerInteractions(app, { provider, db, config, limits: limits.shared });

    // RFC 9728 §3.1: a resource with a path has its metadata at the well-known path + that path.
    for (const resource of Object.values(resources)) {
      const metadata = protectedResourceMetadata(resource, config.publicUrl, issuerOf(config));
      app.get(resource.metadataPath, { schema: { hide: true } }, async (_request, reply) =>
        reply.header('cache-control', 'public, max-age=300').send(metadata),
      );
    }
  }

  const bearer = {
    api: bearerAuth(db, resources.api.url, principals),
    mcp: bearerAuth(db, resources.mcp.url, principals),
  };
  /**
   * The authorization server's part of each node's upkeep (upkeep.ts): expired codes, tokens and
   * sessions, connections past their 90 days, and authorizations whose code was never exchanged.
   * An authorization's code is issued at most an interaction's lifetime after it began and expires
   * a code's lifetime later: a connection pending past both can no longer become active.
   */
  const upkeep: UpkeepTask = {
    name: 'removing expired OAuth codes, tokens, sessions and connections',
    run: async () => ({
      expiredConnections: await expireLapsedConnections(db),
      unfinishedConnections: await dropUnfinishedConnections(db, INTERACTION_TTL_SECONDS + CODE_TTL_SECONDS),
      payloads: await purgeExpiredPayloads(db),
      // With Redis too: the database counts sign-ins and registrations while Redis is away.
      rateLimitCounts: await purgeRateLimits(db),
    }),
  };
  return { provider, bearer, register, upkeep };
}
