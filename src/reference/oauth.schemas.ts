import { Type } from 'typebox';
import { SCOPES } from '../auth/scopes.js';
import { REFRESH_TTL_SECONDS } from '../oauth/connections/connection.service.js';
import { ACCESS_TOKEN_TTL_SECONDS } from '../oauth/provider/provider.js';

/**
 * JSON schemas of the authorization server's bodies (src/oauth/), as OpenAPI components. Values
 * come from the code that answers them, so a changed lifetime or scope changes the document too.
 */

const clientId = Type.String({ description: 'The client_id of the application' });
const resource = (publicUrl: string) =>
  Type.String({ description: `The protected API, exactly ${publicUrl} (RFC 8707); other values are invalid_target` });

export function oauthSchemas(publicUrl: string) {
  const AuthorizationCodeGrant = Type.Object({
    grant_type: Type.Enum(['authorization_code']),
    client_id: clientId,
    code: Type.String({ description: 'The code from the authorization redirect; single use, valid 60 seconds' }),
    redirect_uri: Type.String({ description: 'The redirect_uri of the authorization request' }),
    code_verifier: Type.String({
      pattern: '^[A-Za-z0-9._~-]{43,128}$',
      description: 'The PKCE verifier of the S256 code_challenge (RFC 7636)',
    }),
    resource: Type.Optional(resource(publicUrl)),
  });
  const RefreshTokenGrant = Type.Object({
    grant_type: Type.Enum(['refresh_token']),
    client_id: clientId,
    refresh_token: Type.String({ description: 'The latest refresh token: each refresh rotates it, and a used one revokes the connection' }),
    scope: Type.Optional(Type.String({ description: 'Fewer scopes than granted (never more); absent: all granted scopes' })),
    resource: Type.Optional(resource(publicUrl)),
  });
  return {
    OAuthError: Type.Object(
      {
        error: Type.String({ description: 'RFC 6749 error code, e.g. invalid_request, invalid_grant, invalid_client' }),
        error_description: Type.Optional(Type.String({ description: 'Human-readable detail' })),
      },
      { description: 'An RFC 6749 §5.2 error: the OAuth endpoints answer these, never problem+json' },
    ),
    TokenRequest: Type.Union([AuthorizationCodeGrant, RefreshTokenGrant], {
      description: 'application/x-www-form-urlencoded: a code exchange (with PKCE) or a refresh',
    }),
    TokenResponse: Type.Object({
      access_token: Type.String({ description: 'Opaque; send as Authorization: Bearer' }),
      token_type: Type.Enum(['Bearer']),
      expires_in: Type.Integer({ description: 'Seconds the access token lives', examples: [ACCESS_TOKEN_TTL_SECONDS] }),
      refresh_token: Type.String({ description: 'A new one on every refresh; store it at once' }),
      refresh_token_expires_in: Type.Integer({
        description: 'Seconds the refresh token lives, counted from this response (rolling)',
        examples: [REFRESH_TTL_SECONDS],
      }),
      scope: Type.String({ description: 'The granted scopes, space-separated' }),
    }),
    RevocationRequest: Type.Object({
      token: Type.String({ description: 'An access or refresh token; either revokes the whole connection' }),
      token_type_hint: Type.Optional(Type.Enum(['access_token', 'refresh_token'])),
      client_id: clientId,
    }),
    ClientMetadata: Type.Object(
      {
        redirect_uris: Type.Array(Type.String(), {
          minItems: 1,
          description: 'https://…, or http:// on a loopback address; native apps also a reverse-domain scheme. Compared exactly.',
        }),
        client_name: Type.Optional(Type.String({ description: 'Shown on the consent page, marked unverified' })),
        application_type: Type.Optional(Type.Enum(['web', 'native'])),
        grant_types: Type.Optional(Type.Array(Type.Enum(['authorization_code', 'refresh_token']))),
        response_types: Type.Optional(Type.Array(Type.Enum(['code']))),
        token_endpoint_auth_method: Type.Optional(Type.Enum(['none'], { description: 'Every client is public' })),
      },
      { description: 'RFC 7591 client metadata; other standard fields are accepted' },
    ),
    RegisteredClient: Type.Object(
      {
        client_id: Type.String(),
        client_id_issued_at: Type.Integer({ description: 'Seconds since the epoch' }),
        redirect_uris: Type.Array(Type.String()),
        grant_types: Type.Array(Type.String()),
        response_types: Type.Array(Type.String()),
        token_endpoint_auth_method: Type.Enum(['none']),
      },
      { additionalProperties: true, description: 'The registered metadata; no client_secret and no registration access token' },
    ),
    AuthorizationServerMetadata: Type.Object({
      issuer: Type.String({ examples: [`${publicUrl}/api/auth`] }),
      authorization_endpoint: Type.String(),
      token_endpoint: Type.String(),
      revocation_endpoint: Type.String(),
      registration_endpoint: Type.Optional(Type.String({ description: 'Absent when dynamic registration is off' })),
      scopes_supported: Type.Array(Type.String(), { examples: [[...SCOPES]] }),
      response_types_supported: Type.Array(Type.String()),
      response_modes_supported: Type.Array(Type.String()),
      grant_types_supported: Type.Array(Type.String()),
      token_endpoint_auth_methods_supported: Type.Array(Type.String()),
      revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
      code_challenge_methods_supported: Type.Array(Type.String()),
      authorization_response_iss_parameter_supported: Type.Boolean(),
    }),
    ProtectedResourceMetadata: Type.Object({
      resource: Type.String({ examples: [publicUrl] }),
      authorization_servers: Type.Array(Type.String()),
      scopes_supported: Type.Array(Type.String()),
      bearer_methods_supported: Type.Array(Type.String()),
      resource_name: Type.String(),
      resource_documentation: Type.String(),
    }),
  };
}
