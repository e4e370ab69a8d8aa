import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startOAuthApp } from '../../../test/oauth.helpers.js';

const OPENID_ONLY = [
  'claims_supported',
  'claims_parameter_supported',
  'claim_types_supported',
  'id_token_signing_alg_values_supported',
  'subject_types_supported',
  'userinfo_endpoint',
  'end_session_endpoint',
  'jwks_uri',
  'request_parameter_supported',
  'request_uri_parameter_supported',
  'acr_values_supported',
];

/** Every scope, in the order the metadata lists them: the broad ones, the narrow ones, then those that grant nothing yet. */
const ALL_SCOPES = [
  'everything:read',
  'everything:write',
  'pages:read',
  'pages:write',
  'blogs:read',
  'blogs:write',
  'history:read',
  'history:restore',
  'webhooks:manage',
  'product:read',
  'product:write',
  'order:read',
  'order:write',
];

test('authorization server metadata: the same document at both RFC 8414 locations, OAuth fields only', async (t) => {
  const a = await startOAuthApp(t);
  const spec = await fetch(`${a.issuer}/.well-known/oauth-authorization-server`);
  const rfc = await fetch(`${a.base}/.well-known/oauth-authorization-server/api/auth`);
  assert.equal(spec.status, 200);
  assert.equal(rfc.status, 200);
  const doc = (await spec.json()) as Record<string, unknown>;
  assert.deepEqual(await rfc.json(), doc);
  assert.equal(doc.issuer, `${a.base}/api/auth`);
  assert.equal(doc.authorization_endpoint, `${a.base}/api/auth/authorize`);
  assert.equal(doc.token_endpoint, `${a.base}/api/auth/token`);
  assert.equal(doc.revocation_endpoint, `${a.base}/api/auth/revoke`);
  assert.equal(doc.registration_endpoint, `${a.base}/api/auth/reg`);
  assert.deepEqual(doc.scopes_supported, ALL_SCOPES);
  assert.deepEqual(doc.code_challenge_methods_supported, ['S256']);
  assert.deepEqual(doc.response_types_supported, ['code']);
  assert.deepEqual(doc.grant_types_supported, ['authorization_code', 'refresh_token']);
  assert.deepEqual(doc.token_endpoint_auth_methods_supported, ['none']);
  assert.equal(doc.authorization_response_iss_parameter_supported, true);
  for (const field of OPENID_ONLY) assert.equal(doc[field], undefined, field);
});

test('endpoint URLs come from PUBLIC_URL, not from the Host a request came with', async (t) => {
  const a = await startOAuthApp(t);
  const response = await a.app.inject({ url: '/api/auth/.well-known/oauth-authorization-server', headers: { host: 'evil.example' } });
  const doc = response.json() as Record<string, string>;
  assert.equal(doc.token_endpoint, `${a.base}/api/auth/token`);
});

test('RFC 9728 protected resource metadata, linked from the 401 challenge', async (t) => {
  const a = await startOAuthApp(t);
  const challenge = (await a.app.inject({ url: '/api/page' })).headers['www-authenticate'];
  const link = /resource_metadata="([^"]+)"/.exec(String(challenge))?.[1];
  assert.equal(link, `${a.base}/.well-known/oauth-protected-resource`);
  const response = await fetch(String(link));
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), {
    resource: a.base,
    authorization_servers: [`${a.base}/api/auth`],
    scopes_supported: ALL_SCOPES,
    bearer_methods_supported: ['header'],
    resource_name: 'Content API',
    resource_documentation: `${a.base}/docs`,
  });
});
