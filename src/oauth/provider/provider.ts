import { createPrivateKey, hkdfSync } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import Provider, { type Configuration, errors, interactionPolicy, type KoaContextWithOIDC } from 'oidc-provider';
import { findUser } from '../../accounts/account.repository.js';
import { protectedResources, resourceByUrl } from '../../auth/resources.js';
import type { Config } from '../../config.js';
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from '../../db/errors.js';
import { readHandle } from '../../db/request-transaction.js';
import type { DbHandle } from '../../db/schema.js';
import { corsOriginAllowed } from '../../http/cors.js';
import type { OutboundFetch } from '../../http/outbound.js';
import type { RateLimitStore } from '../../http/rate-limit.js';
import { renderPage } from '../../web/views.js';
import { newClientId } from '../clients/client.service.js';
import { clientMetadataDocuments } from '../clients/client-metadata.js';
import { readConnectionSite } from '../connections/connection.repository.js';
import { REFRESH_TTL_SECONDS } from '../connections/connection.service.js';
import { assertRequestedScopes } from '../scopes.js';
import { KyselyAdapter } from './oauth.adapter.js';
import { installProviderHooks } from './provider.hooks.js';

export const AUTH_PATH = '/api/auth';
export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const CODE_TTL_SECONDS = 60;
/** How long an authorization may take from its request until its code is issued (sign-in, website, consent, resume). */
export const INTERACTION_TTL_SECONDS = 30 * 60;
/** A sign-in lasts a day, on the OAuth pages and in the owner console alike (one session). */
export const SESSION_TTL_SECONDS = 24 * 60 * 60;

export function issuerOf(config: Config): string {
  return `${config.publicUrl}${AUTH_PATH}`;
}

/**
 * Nothing is signed (tokens are opaque, there are no ID tokens), but oidc-provider wants a key.
 * Derived from the cookie secret, so every process publishes the same one.
 */
function signingKeys(config: Config) {
  const seed = Buffer.from(hkdfSync('sha256', config.cookieSecrets[0] ?? '', 'cms', 'oauth-signing-key', 32));
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  const jwk = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({ format: 'jwk' });
  return { keys: [{ ...jwk, use: 'sig', alg: 'EdDSA' }] };
}

/** Login, then the website, then consent: the website picker is a prompt of its own. */
function interactionSteps() {
  const { Prompt, Check } = interactionPolicy;
  const policy = interactionPolicy.base();
  const selectSite = new Prompt(
    { name: 'select_site', requestable: false },
    new Check('site_not_selected', 'the website to connect is not chosen', (ctx) =>
      ctx.oidc.result?.select_site ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT,
    ),
  );
  policy.add(selectSite, 1);
  return policy;
}

function renderError(ctx: KoaContextWithOIDC, out: { error: string; error_description?: string }) {
  // Only the browser-facing endpoints answer HTML; token, revocation and registration stay JSON.
  if (ctx.oidc?.route !== 'authorization' && ctx.oidc?.route !== 'resume') {
    ctx.type = 'json';
    ctx.body = out;
    return;
  }
  const page = renderPage('error', {
    title: 'This request cannot continue',
    message: `The application's request was refused: ${out.error_description ?? 'it is not a valid authorization request'}.`,
    hint: 'Nothing was shared. If an application sent you here, let its developer know.',
    code: out.error,
  });
  ctx.set(page.headers);
  ctx.body = page.html;
}

/** `limits`: the counters of metadata document fetches per address (client-metadata.ts). */
/** `documents`: the guarded fetch for Client ID Metadata Documents; the guard's defaults unless given (tests). */
export function createProvider(
  config: Config,
  db: DbHandle,
  log: FastifyBaseLogger,
  limits: RateLimitStore,
  documents?: OutboundFetch,
): Provider {
  const publicUrl = config.publicUrl;
  const resourceList = Object.values(protectedResources(publicUrl))
    .map((r) => r.url)
    .join(' or ');
  const metadata = clientMetadataDocuments(config, { limits, ...(documents ? { fetch: documents } : {}) });
  const configuration: Configuration = {
    fetch: metadata.fetch,
    adapter: (name: string) => new KyselyAdapter(db, name),
    clientAuthMethods: ['none'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'EdDSA',
    },
    enabledJWA: { idTokenSigningAlgValues: ['EdDSA'] },
    jwks: signingKeys(config),
    responseTypes: ['code'],
    scopes: [],
    pkce: { required: () => true },
    allowOmittingSingleRegisteredRedirectUri: false,
    // Expiry is exact: the adapter's expires_at decides, and this keeps the provider in step.
    clockTolerance: 0,
    cookies: { keys: [...config.cookieSecrets] },
    routes: { authorization: '/authorize', token: '/token', revocation: '/revoke', registration: '/reg' },
    // A token or revocation request from a page of an origin CORS_ORIGINS does not list is refused
    // (invalid_request), not only left unreadable: the browser sends a form POST without asking first.
    clientBasedCORS: (_ctx, origin) => corsOriginAllowed(config.corsOrigins, origin || undefined),
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      dPoP: { enabled: false },
      introspection: { enabled: false },
      revocation: {
        enabled: true,
        // A client revokes only its own tokens; another client's is left alone with the same 200
        // (RFC 7009 §2.2: every client is public, so nothing tells it the token is not its own).
        allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
      },
      registration: {
        enabled: config.oauth.dynamicRegistration,
        initialAccessToken: false,
        issueRegistrationAccessToken: false,
        idFactory: () => newClientId(),
      },
      clientIdMetadataDocument: metadata.feature,
      resourceIndicators: {
        enabled: true,
        // A missing resource is an error, not "whatever the server thinks" (DESIGN §4).
        defaultResource: async (_ctx, _client, oneOf) => {
          if (oneOf) return oneOf;
          throw new errors.InvalidTarget(`resource is required and must be ${resourceList}`);
        },
        useGrantedResource: () => true,
        // The audience is the resource itself: bearerAuth of each resource accepts only its own tokens.
        getResourceServerInfo: (ctx, indicator) => {
          // RFC 8707 allows several resources, but a token here has one audience and a grant one
          // resource; oidc-provider lets resource repeat, so it is refused here, before sign-in.
          if (ctx.oidc.route === 'authorization' && Array.isArray(ctx.oidc.params?.resource)) {
            throw new errors.InvalidRequest(`resource must be given once: this server issues a token for one resource, ${resourceList}`);
          }
          const resource = resourceByUrl(publicUrl, indicator);
          if (!resource) throw new errors.InvalidTarget(`resource must be ${resourceList}`);
          if (ctx.oidc.route === 'authorization') assertRequestedScopes(ctx.oidc.params?.scope, resource.scopes);
          return {
            scope: resource.scopes.join(' '),
            audience: resource.url,
            accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
            accessTokenFormat: 'opaque',
          };
        },
      },
    },
    // The website is not part of the Grant; the connection row keyed by grant id holds it. Read
    // (as the account below) through the token request's transaction once it is open.
    extraTokenClaims: async (_ctx, token) => {
      const grantId = 'grantId' in token ? token.grantId : undefined;
      const siteId = grantId ? await readConnectionSite(await readHandle(db), grantId) : undefined;
      return siteId === undefined ? undefined : { site_id: siteId };
    },
    // Each authorization gets its own grant: the session's earlier one may be for another website.
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId;
      return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
    },
    // RFC 7009 of either token removes every token of the grant (oidc-provider does that anyway);
    // the grant goes too, so the connection reads revoked instead of active with nothing left.
    revokeGrantPolicy: () => true,
    expiresWithSession: () => false,
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_SECONDS,
      AuthorizationCode: CODE_TTL_SECONDS,
      // A function: the default gives a rotated token of a public client only what was left.
      RefreshToken: () => REFRESH_TTL_SECONDS,
      // The connection ends when its refresh token does (rolling); the grant must not end first.
      Grant: 10 * 365 * 24 * 60 * 60,
      Interaction: INTERACTION_TTL_SECONDS,
      Session: SESSION_TTL_SECONDS,
    },
    interactions: {
      url: (_ctx, interaction) => `${AUTH_PATH}/interaction/${interaction.uid}`,
      policy: interactionSteps(),
    },
    findAccount: async (_ctx, sub) => {
      const user = /^\d+$/.test(sub) ? await findUser(await readHandle(db), Number(sub)) : undefined;
      return user ? { accountId: sub, claims: () => ({ sub }) } : undefined;
    },
    renderError,
  };

  const provider = new Provider(issuerOf(config), configuration);
  // X-Forwarded-Proto decides whether cookies are Secure; installRequestHeaders has already
  // replaced it (and X-Forwarded-For/-Host) with what the trusted hops (TRUST_PROXY) said.
  provider.proxy = true;
  installProviderHooks(provider, db, issuerOf(config));
  // src/http/cors.ts decides CORS: the answers it allows reach the provider with their headers set,
  // and the provider then adds none. Its own (any origin, on its preflights, metadata and keys) are
  // removed for an origin CORS_ORIGINS does not list.
  provider.use(async (ctx, next) => {
    await next();
    if (corsOriginAllowed(config.corsOrigins, ctx.get('origin') || undefined)) return;
    for (const name of Object.keys(ctx.response.headers)) if (name.startsWith('access-control-')) ctx.remove(name);
  });

  provider.on('server_error', (ctx, err: Error) => {
    if (!isDatabaseUnavailable(err)) return log.error({ err }, 'OAuth server error');
    // The database went away under the request: nothing was granted or rotated (its transaction
    // did not commit), so the client may try again, as with the API's 503.
    log.warn({ err }, 'the database is unavailable; OAuth request answered 503');
    ctx.status = 503;
    ctx.set('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
    if (ctx.type !== 'text/html') {
      ctx.body = { error: 'temporarily_unavailable', error_description: 'The database is unavailable for a moment; try again shortly.' };
    }
  });
  return provider;
}
