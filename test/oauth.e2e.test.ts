import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { listConnections, revokeConnection } from '../src/oauth/connections/connection.service.js';
import { Browser, completeInteraction, type OAuthTestApp, REDIRECT_URI, startOAuthApp } from './oauth.helpers.js';

/** The owner's side: log in, pick the second website, approve; returns the callback URL. */
async function approveInBrowser(a: OAuthTestApp, authorizationUrl: URL, browser = new Browser(a.base)): Promise<URL> {
  const step = await completeInteraction(browser, authorizationUrl.href, { login: a.owner, site: a.site2.siteId });
  assert.ok(step.callback, `ended on a page: ${step.html.slice(0, 300)}`);
  return step.callback;
}

async function apiStatus(a: OAuthTestApp, token: string): Promise<number> {
  return (await fetch(`${a.base}/api/page`, { headers: { authorization: `Bearer ${token}` } })).status;
}

test('openid-client 6: discovery, PKCE + resource, login, website, consent, API call, refresh, replay, revocation', async (t) => {
  const a = await startOAuthApp(t);
  const page = await fetch(`${a.base}/api/page`, {
    method: 'POST',
    headers: { ...a.site2.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ page_usertitle: 'Hello from site 2' }),
  });
  assert.equal(page.status, 201);

  for (const metadataUrl of [
    `${a.issuer}/.well-known/oauth-authorization-server`,
    `${a.base}/.well-known/oauth-authorization-server/api/auth`,
  ]) {
    const config = await client.discovery(new URL(metadataUrl), a.clientId, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
    assert.equal(config.serverMetadata().issuer, a.issuer);
  }
  const config = await client.discovery(
    new URL(`${a.issuer}/.well-known/oauth-authorization-server`),
    a.clientId,
    undefined,
    client.None(),
    {
      execute: [client.allowInsecureRequests],
    },
  );

  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: 'everything:read order:read',
    state,
    resource: a.base,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const callback = await approveInBrowser(a, url);
  assert.equal(callback.searchParams.get('iss'), a.issuer);

  const tokens = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: verifier, expectedState: state },
    { resource: a.base },
  );
  assert.equal(tokens.token_type.toLowerCase(), 'bearer');
  assert.equal(tokens.expires_in, 3600);
  assert.equal(tokens.refresh_token_expires_in, 7776000);
  assert.equal(tokens.scope, 'everything:read order:read');

  const response = await client.fetchProtectedResource(config, tokens.access_token, new URL(`${a.base}/api/page`), 'GET');
  assert.equal(response.status, 200);
  const body = (await response.json()) as { data: Array<{ page_usertitle: string }> };
  assert.deepEqual(
    body.data.map((p) => p.page_usertitle),
    ['Hello from site 2'],
    'the token reads the chosen website',
  );

  const rotated = await client.refreshTokenGrant(config, tokens.refresh_token!);
  assert.notEqual(rotated.refresh_token, tokens.refresh_token);
  assert.equal(rotated.refresh_token_expires_in, 7776000);
  assert.equal(await apiStatus(a, rotated.access_token), 200);

  await assert.rejects(
    client.refreshTokenGrant(config, tokens.refresh_token!),
    (error: { error?: string }) => error.error === 'invalid_grant',
  );
  assert.equal(await apiStatus(a, rotated.access_token), 401, 'the replay revoked the connection: the newest access token is dead');
  await assert.rejects(
    client.refreshTokenGrant(config, rotated.refresh_token!),
    (error: { error?: string }) => error.error === 'invalid_grant',
  );
  assert.equal((await listConnections(a.db.kysely, a.site2.siteId))[0]?.status, 'revoked');

  // A new connection, which the owner revokes from the CLI/console side.
  const verifier2 = client.randomPKCECodeVerifier();
  const url2 = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: 'everything:read',
    state,
    resource: a.base,
    code_challenge: await client.calculatePKCECodeChallenge(verifier2),
    code_challenge_method: 'S256',
  });
  const second = await client.authorizationCodeGrant(
    config,
    await approveInBrowser(a, url2),
    { pkceCodeVerifier: verifier2, expectedState: state },
    { resource: a.base },
  );
  assert.equal(await apiStatus(a, second.access_token), 200);
  const active = (await listConnections(a.db.kysely, a.site2.siteId)).find((c) => c.status === 'active');
  assert.ok(active);
  await revokeConnection(a.db.kysely, active.id);
  assert.equal(await apiStatus(a, second.access_token), 401);
  await assert.rejects(
    client.refreshTokenGrant(config, second.refresh_token!),
    (error: { error?: string }) => error.error === 'invalid_grant',
  );
});

test('oauth4webapi 3: RFC 9728 → RFC 8414 discovery, code flow, API call, refresh, replay, client revocation', async (t) => {
  const a = await startOAuthApp(t);
  const insecure = { [oauth.allowInsecureRequests]: true };
  const resource = await oauth.processResourceDiscoveryResponse(
    new URL(a.base),
    await oauth.resourceDiscoveryRequest(new URL(a.base), insecure),
  );
  assert.deepEqual(resource.authorization_servers, [a.issuer]);
  const issuer = new URL(resource.authorization_servers![0]!);
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
  const appClient: oauth.Client = { client_id: a.clientId };
  const auth = oauth.None();

  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: a.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: 'everything:write',
    state,
    resource: a.base,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString();
  const params = oauth.validateAuthResponse(as, appClient, await approveInBrowser(a, url), state);
  const exchange = await oauth.authorizationCodeGrantRequest(as, appClient, auth, params, REDIRECT_URI, verifier, {
    additionalParameters: { resource: a.base },
    ...insecure,
  });
  const tokens = await oauth.processAuthorizationCodeResponse(as, appClient, exchange);
  assert.equal(tokens.refresh_token_expires_in, 7776000);
  assert.equal(tokens.scope, 'everything:write');

  const created = await oauth.protectedResourceRequest(
    tokens.access_token,
    'POST',
    new URL(`${a.base}/api/page`),
    new Headers({ 'content-type': 'application/json' }),
    JSON.stringify({ page_usertitle: 'Written over OAuth' }),
    insecure,
  );
  assert.equal(created.status, 201);
  const [own] = (
    (await (await fetch(`${a.base}/api/page`, { headers: a.site2.headers })).json()) as { data: Array<{ page_usertitle: string }> }
  ).data;
  assert.equal(own?.page_usertitle, 'Written over OAuth', 'written to the chosen website');

  const refreshed = await oauth.processRefreshTokenResponse(
    as,
    appClient,
    await oauth.refreshTokenGrantRequest(as, appClient, auth, tokens.refresh_token!, insecure),
  );
  assert.equal(refreshed.refresh_token_expires_in, 7776000);
  const replay = oauth.processRefreshTokenResponse(
    as,
    appClient,
    await oauth.refreshTokenGrantRequest(as, appClient, auth, tokens.refresh_token!, insecure),
  );
  await assert.rejects(replay, (error: { error?: string }) => error.error === 'invalid_grant');
  assert.equal(await apiStatus(a, refreshed.access_token), 401);

  // Client-side revocation (RFC 7009) of a fresh connection.
  const again = await approveInBrowser(a, url);
  const fresh = await oauth.processAuthorizationCodeResponse(
    as,
    appClient,
    await oauth.authorizationCodeGrantRequest(
      as,
      appClient,
      auth,
      oauth.validateAuthResponse(as, appClient, again, state),
      REDIRECT_URI,
      verifier,
      {
        additionalParameters: { resource: a.base },
        ...insecure,
      },
    ),
  );
  assert.equal(await apiStatus(a, fresh.access_token), 200);
  await oauth.processRevocationResponse(await oauth.revocationRequest(as, appClient, auth, fresh.refresh_token!, insecure));
  assert.equal(await apiStatus(a, fresh.access_token), 401);
  const statuses = (await listConnections(a.db.kysely, a.site2.siteId)).map((c) => c.status);
  assert.deepEqual(statuses, ['revoked', 'revoked']);
});
