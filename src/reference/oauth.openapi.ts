import { SCOPES } from '../auth/scopes.js';
import type { Config } from '../config.js';
import { AUTH_PATH } from '../oauth/provider/provider.js';
import { COUNTED, SAME_ORIGIN } from './openapi.finish.js';

/**
 * The authorization server's endpoints as OpenAPI paths. Hidden catch-all routes hand them to
 * oidc-provider (src/oauth/oauth.plugin.ts), so nothing is generated for them: they are written
 * here, once, and @fastify/swagger merges them with the generated paths (its `openapi.paths`).
 * The schemas they name are components from oauth.schemas.ts.
 */

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object) => ({ 'application/json': { schema } });
const form = (name: string) => ({ required: true, content: { 'application/x-www-form-urlencoded': { schema: ref(name) } } });
const oauthError = (description: string) => ({ description, content: json(ref('OAuthError')) });
const noStore = { 'Cache-Control': { description: 'no-store', schema: { type: 'string', enum: ['no-store'] } } };
const problem = { 'application/problem+json': { schema: ref('Problem') } };
const html = { 'text/html': { schema: { type: 'string' } } };
/**
 * Beyond a limit these endpoints answer problem+json like the rest of the service
 * (docs/rate-limits.md). Every answer of theirs is counted ("token-client" and "token-ip", and on
 * registration "registration"), so it carries RateLimit and RateLimit-Policy (openapi.finish.ts).
 */
const tooManyRequests = (description: string) => ({ description, content: problem });
const counted = { [COUNTED]: true };
/** The database went away under the request: nothing was granted or rotated (src/oauth/provider/provider.ts). */
const unavailable = oauthError(
  'temporarily_unavailable: the database could not answer; nothing changed, try again after Retry-After seconds',
);
const PER_CLIENT_AND_ADDRESS = 'too-many-requests: the client or the address made more than RATE_LIMIT_TOKEN requests this minute';
const tags = ['oauth'];

function query(name: string, description: string, schema: object = { type: 'string' }, required = true) {
  return { in: 'query', name, required, description, schema };
}

function authorize(publicUrl: string) {
  return {
    // An HTML page: it answers no other origin.
    [SAME_ORIGIN]: true,
    operationId: 'authorize',
    tags,
    summary: 'Authorization request (browser)',
    description:
      'Authorization code flow with PKCE (S256). Send the user’s browser here; after login, the choice of website and consent it is sent to redirect_uri with `code`, `state` and `iss` (RFC 9207), or with `error`, `error_description`, `state` and `iss`.',
    parameters: [
      query('response_type', 'Only code', { type: 'string', enum: ['code'] }),
      query('client_id', 'The application’s client_id'),
      query('redirect_uri', 'One of the client’s registered redirect URIs, byte for byte'),
      query('scope', `Space-separated, each one of: ${SCOPES.join(' ')}; an unknown one is invalid_scope`),
      query('state', 'Returned unchanged in the redirect; the application checks it', { type: 'string' }, false),
      query('code_challenge', 'BASE64URL(SHA-256(code_verifier)) (RFC 7636)'),
      query('code_challenge_method', 'Only S256', { type: 'string', enum: ['S256'] }),
      query('resource', `The protected API, exactly ${publicUrl} (RFC 8707)`, { type: 'string', enum: [publicUrl] }),
      query(
        'response_mode',
        'How the result reaches redirect_uri: query (the default for code), fragment, or form_post (an HTML form the browser posts)',
        { type: 'string', enum: ['query', 'fragment', 'form_post'] },
        false,
      ),
    ],
    responses: {
      200: {
        description:
          'With response_mode=form_post, once the user is done: an HTML page whose form posts code (or error), state and iss to redirect_uri',
        content: html,
      },
      303: {
        description: 'To the login, website and consent pages, then to redirect_uri with code (or error), state and iss',
        headers: { Location: { schema: { type: 'string', format: 'uri-reference' } } },
      },
      400: {
        description: 'Unknown client_id or a redirect_uri not registered: an HTML error page, no redirect',
        content: html,
      },
    },
  };
}

const token = {
  ...counted,
  operationId: 'token',
  tags,
  summary: 'Token request: code exchange or refresh',
  description:
    'Form-encoded. `authorization_code` exchanges a code with its PKCE code_verifier; `refresh_token` rotates the refresh token (a rotated one used again revokes the connection). Errors are RFC 6749 JSON.',
  requestBody: form('TokenRequest'),
  responses: {
    200: { description: 'Tokens', headers: noStore, content: json(ref('TokenResponse')) },
    400: oauthError(
      'invalid_request, invalid_grant (a used, expired or foreign code or refresh token, a wrong code_verifier), invalid_scope, invalid_target, unsupported_grant_type',
    ),
    401: oauthError('invalid_client: an unknown client_id'),
    429: tooManyRequests(PER_CLIENT_AND_ADDRESS),
    503: unavailable,
  },
};

const revoke = {
  ...counted,
  operationId: 'revoke',
  tags,
  summary: 'Token revocation (RFC 7009)',
  description:
    'Revoking either token of a connection revokes the connection. Unknown tokens and other clients’ tokens get 200 and change nothing.',
  requestBody: form('RevocationRequest'),
  responses: {
    200: { description: 'Revoked, or nothing to revoke (empty body)' },
    400: oauthError('invalid_request: no token or no client_id'),
    401: oauthError('invalid_client: an unknown client_id'),
    429: tooManyRequests(PER_CLIENT_AND_ADDRESS),
    503: unavailable,
  },
};

const register = {
  ...counted,
  operationId: 'registerClient',
  tags,
  summary: 'Dynamic client registration (RFC 7591)',
  description:
    'Registers a public client (no secret, PKCE). At most RATE_LIMIT_TOKEN requests a minute and 20 registrations an hour per IP address.',
  requestBody: { required: true, content: json(ref('ClientMetadata')) },
  responses: {
    201: { description: 'Registered', headers: noStore, content: json(ref('RegisteredClient')) },
    400: oauthError('invalid_redirect_uri or invalid_client_metadata'),
    413: { description: 'payload-too-large: a body over 64 KiB, refused before the provider reads it', content: problem },
    429: tooManyRequests(
      'too-many-requests: the address made more than RATE_LIMIT_TOKEN requests this minute or 20 registrations this hour',
    ),
    503: unavailable,
  },
};

/** Any request whose request line and headers exceed Node's limit, before any route runs. */
const uriTooLong = { description: 'uri-too-long: the request line and headers are longer than 16 KiB', content: problem };

/** The same document at two addresses, so two operations, each with its own operationId. */
const serverMetadata = (operationId: string, address: string) => ({
  operationId,
  tags,
  summary: 'Authorization server metadata (RFC 8414)',
  description: `The same document at both addresses (this is ${address}); every URL in it is built from PUBLIC_URL.`,
  responses: { 200: { description: 'Metadata', content: json(ref('AuthorizationServerMetadata')) }, 414: uriTooLong },
});

const resourceMetadata = {
  operationId: 'getProtectedResourceMetadata',
  tags,
  summary: 'Protected resource metadata (RFC 9728)',
  description: 'Linked from the resource_metadata parameter of every 401 challenge.',
  responses: {
    200: { description: 'Metadata', content: json(ref('ProtectedResourceMetadata')) },
    // A Fastify route, so it has the ETag of every GET (src/http/representation.ts); oidc-provider's server metadata has none.
    304: {
      description: 'Not modified: If-None-Match names the current ETag; no body',
    },
    414: uriTooLong,
  },
};

export function oauthPaths(config: Config): Record<string, Record<string, object>> {
  return {
    [`${AUTH_PATH}/authorize`]: { get: authorize(config.publicUrl) },
    [`${AUTH_PATH}/token`]: { post: token },
    [`${AUTH_PATH}/revoke`]: { post: revoke },
    ...(config.oauth.dynamicRegistration ? { [`${AUTH_PATH}/reg`]: { post: register } } : {}),
    [`/.well-known/oauth-authorization-server${AUTH_PATH}`]: {
      get: serverMetadata('getAuthorizationServerMetadata', 'the RFC 8414 address, the one the issuer implies'),
    },
    [`${AUTH_PATH}/.well-known/oauth-authorization-server`]: {
      get: serverMetadata('getIssuerAuthorizationServerMetadata', 'the address under the issuer, where OpenID Connect clients look'),
    },
    '/.well-known/oauth-protected-resource': { get: resourceMetadata },
  };
}
