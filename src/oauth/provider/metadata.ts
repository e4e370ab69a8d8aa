import type Provider from 'oidc-provider';
import type { ProtectedResource } from '../../auth/resources.js';
import { SCOPES } from '../../auth/scopes.js';

/**
 * RFC 8414 metadata for exactly the flow we run. oidc-provider's discovery document always
 * carries OpenID Connect fields (claims, ID token algorithms, jwks_uri…) and takes endpoint URLs
 * from the request's Host; this one has none of the former and builds every URL from the issuer.
 */
export function authorizationServerMetadata(provider: Provider, issuer: string, served: Record<string, unknown>) {
  const url = (route: string) => `${issuer}${provider.pathFor(route, { mountPath: '' })}`;
  return {
    issuer,
    authorization_endpoint: url('authorization'),
    token_endpoint: url('token'),
    revocation_endpoint: url('revocation'),
    ...(served.registration_endpoint ? { registration_endpoint: url('registration') } : {}),
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: served.response_modes_supported,
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    ...(served.client_id_metadata_document_supported ? { client_id_metadata_document_supported: true } : {}),
  };
}

/** RFC 9728: what a client learns from a resource's 401 challenge. */
export function protectedResourceMetadata(resource: ProtectedResource, publicUrl: string, issuer: string) {
  return {
    resource: resource.url,
    authorization_servers: [issuer],
    scopes_supported: [...resource.scopes],
    bearer_methods_supported: ['header'],
    resource_name: resource.title,
    resource_documentation: `${publicUrl}/docs`,
  };
}
