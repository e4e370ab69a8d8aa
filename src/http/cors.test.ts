import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { buildBlogApp, image, postForm } from '../../test/blog-fixtures.js';
import { buildTestApp, json } from '../../test/helpers.js';
import { authorizeCode, REDIRECT_URI, startOAuthApp } from '../../test/oauth.helpers.js';
import { loadConfig } from '../config.js';
import { ConfigError } from '../config-error.js';
import { answersOtherOrigins } from './cors.js';

const APP = 'https://app.example';
const OTHER = 'https://other.example';

function preflight(url: string, method: string, headers: string, origin = APP) {
  return {
    method: 'OPTIONS' as const,
    url,
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  };
}

/** The CORS headers of an answer, in lower case, for a readable assertion. */
function corsOf(response: LightMyRequestResponse): Record<string, string> {
  return Object.fromEntries(
    Object.entries(response.headers)
      .filter(([name]) => name.startsWith('access-control-'))
      .map(([name, value]) => [name, String(value)]),
  );
}

function listed(value: string | undefined): string[] {
  return (value ?? '').split(',').map((v) => v.trim().toLowerCase());
}

const EXPOSED = ['etag', 'location', 'ratelimit', 'ratelimit-policy', 'retry-after', 'www-authenticate'];

test('a preflight of the API, MCP and OAuth endpoints is a 204 with the headers asked for and the methods of the path', async (t) => {
  const { app } = await buildTestApp(t);
  const asked = 'authorization, content-type, if-match, if-none-match, apiid, apikey, x-api-id, x-api-key';
  const cases: [string, string, string, string[]][] = [
    ['/api/page', 'POST', asked, ['GET', 'HEAD', 'POST']],
    ['/api/page/12', 'DELETE', asked, ['GET', 'HEAD', 'PATCH', 'DELETE']],
    ['/webapps/api/blog/3', 'GET', asked, ['GET', 'HEAD', 'PATCH', 'DELETE']],
    ['/webapps/api/blog/', 'POST', asked, ['GET', 'HEAD', 'POST']],
    ['/mcp', 'POST', 'authorization, content-type, mcp-session-id, mcp-protocol-version, last-event-id', ['POST', 'GET', 'DELETE', 'HEAD']],
    ['/api/auth/token', 'POST', 'content-type', ['POST']],
    ['/api/auth/revoke', 'POST', 'content-type', ['POST']],
    ['/api/auth/reg', 'POST', 'content-type', ['POST']],
    ['/.well-known/oauth-protected-resource', 'GET', 'content-type', ['GET', 'HEAD']],
    ['/.well-known/oauth-protected-resource/mcp', 'GET', 'content-type', ['GET', 'HEAD']],
    ['/.well-known/oauth-authorization-server/api/auth', 'GET', 'content-type', ['GET', 'HEAD']],
    ['/api/auth/.well-known/oauth-authorization-server', 'GET', 'content-type', ['GET', 'HEAD']],
  ];
  for (const [url, method, headers, methods] of cases) {
    const response = await app.inject(preflight(url, method, headers));
    assert.equal(response.statusCode, 204, `${url}: ${response.body}`);
    const cors = corsOf(response);
    assert.equal(cors['access-control-allow-origin'], '*', url);
    assert.deepEqual(listed(cors['access-control-allow-methods']).sort(), methods.map((m) => m.toLowerCase()).sort(), url);
    for (const header of headers.split(', ')) assert.ok(listed(cors['access-control-allow-headers']).includes(header), `${url}: ${header}`);
    assert.equal(cors['access-control-allow-credentials'], undefined, url);
    assert.ok(Number(cors['access-control-max-age']) > 0, url);
  }
});

test('actual answers expose ETag, Location, the rate limit and WWW-Authenticate, errors included, and never allow credentials', async (t) => {
  const { app, site } = await buildTestApp(t, { config: { rateLimits: { api: 2, token: 0 } } });
  const headers = { ...site.headers, origin: APP };
  const created = await app.inject({ method: 'POST', url: '/api/page', headers, payload: { page_usertitle: 'Hours' } });
  assert.equal(created.statusCode, 201, created.body);
  const got = await app.inject({ url: `/webapps/api/page/${json(created).data[0].page}`, headers });
  const refused = await app.inject({ url: '/api/page', headers });
  assert.equal(refused.statusCode, 429);
  const anonymous = await app.inject({ url: '/api/page', headers: { origin: APP } });
  assert.equal(anonymous.statusCode, 401);
  const missing = await app.inject({ url: '/api/no-such-endpoint', headers: { origin: APP } });
  assert.equal(missing.statusCode, 404);
  const mcp = await app.inject({ method: 'POST', url: '/mcp', headers: { origin: APP, 'content-type': 'application/json' }, payload: {} });
  assert.equal(mcp.statusCode, 401);
  const metadata = await app.inject({ url: '/.well-known/oauth-protected-resource', headers: { origin: APP } });
  const server = await app.inject({ url: '/api/auth/.well-known/oauth-authorization-server', headers: { origin: APP } });
  assert.equal(server.statusCode, 200);
  assert.equal(json(server).issuer, 'http://localhost:8080/api/auth');
  const token = await app.inject({
    method: 'POST',
    url: '/api/auth/token',
    headers: { origin: APP, 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=authorization_code&code=nothing&client_id=nobody',
  });
  assert.equal(token.statusCode, 401, token.body);
  for (const response of [created, got, refused, anonymous, missing, mcp, metadata, server, token]) {
    const cors = corsOf(response);
    assert.equal(cors['access-control-allow-origin'], '*', response.body);
    assert.deepEqual(listed(cors['access-control-expose-headers']).sort(), [...EXPOSED].sort());
    assert.equal(cors['access-control-allow-credentials'], undefined);
  }
  assert.ok(created.headers.location && got.headers.etag && refused.headers['retry-after'] && anonymous.headers['www-authenticate']);
});

test('the HTML pages, /api/auth/authorize and its interaction pages get no CORS headers, nor do their preflights', async (t) => {
  const { app } = await buildTestApp(t);
  for (const url of ['/', '/try', '/docs', '/console/login', '/api/auth/authorize?client_id=x', '/api/auth/interaction/abc', '/healthz']) {
    const response = await app.inject({ url, headers: { origin: APP } });
    assert.deepEqual(corsOf(response), {}, url);
    const asked = await app.inject(preflight(url, 'GET', 'authorization'));
    assert.deepEqual(corsOf(asked), {}, `preflight of ${url}`);
  }
  // Another spelling of a provider page reaches the same page: the route decides, not the spelling.
  assert.equal(answersOtherOrigins('/api/auth/*'), false);
  assert.equal(answersOtherOrigins('/api/auth/authorize'), false);
  assert.equal(answersOtherOrigins('/api/authx'), true, 'not under /api/auth/');
});

test('with a CORS_ORIGINS list, a listed origin is echoed with Vary: Origin and any other gets no CORS headers', async (t) => {
  const { app, site } = await buildTestApp(t, { config: { corsOrigins: [APP, 'http://127.0.0.1:5173'] } });
  const allowed = await app.inject(preflight('/api/page', 'GET', 'authorization'));
  assert.equal(allowed.statusCode, 204);
  assert.equal(allowed.headers['access-control-allow-origin'], APP);
  assert.match(String(allowed.headers.vary), /\bOrigin\b/);

  const other = await app.inject(preflight('/api/page', 'GET', 'authorization', OTHER));
  assert.deepEqual(corsOf(other), {});
  assert.match(String(other.headers.vary), /\bOrigin\b/, 'the answer depends on Origin');

  const read = await app.inject({ url: '/api/page', headers: { ...site.headers, origin: APP } });
  assert.equal(read.headers['access-control-allow-origin'], APP);
  assert.match(String(read.headers.vary), /\bOrigin\b/);
  for (const origin of [OTHER, undefined]) {
    const response = await app.inject({ url: '/api/page', headers: { ...site.headers, ...(origin ? { origin } : {}) } });
    assert.equal(response.statusCode, 200, 'a server-side caller is not refused: CORS only governs what a browser lets a page read');
    assert.deepEqual(corsOf(response), {}, String(origin));
    assert.match(String(response.headers.vary), /\bOrigin\b/);
  }

  // The provider's own CORS answers follow the same list: its metadata document, its preflights.
  for (const url of [
    '/api/auth/.well-known/oauth-authorization-server',
    '/.well-known/oauth-authorization-server/api/auth',
    '/api/auth/jwks',
  ]) {
    assert.deepEqual(corsOf(await app.inject({ url, headers: { origin: OTHER } })), {}, url);
    assert.equal((await app.inject({ url, headers: { origin: APP } })).headers['access-control-allow-origin'], APP, url);
  }
  assert.deepEqual(corsOf(await app.inject(preflight('/api/auth/jwks', 'GET', 'content-type', OTHER))), {});
});

test('with a CORS_ORIGINS list, the token endpoint refuses a page of another origin and answers a listed one', async (t) => {
  const a = await startOAuthApp(t, { config: { corsOrigins: [APP] } });
  const { code, verifier } = await authorizeCode(a);
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: a.clientId,
    redirect_uri: REDIRECT_URI,
  });
  const foreign = await fetch(`${a.issuer}/token`, { method: 'POST', headers: { origin: OTHER }, body: form });
  assert.equal(foreign.status, 400);
  assert.equal(((await foreign.json()) as { error: string }).error, 'invalid_request');
  assert.equal(foreign.headers.get('access-control-allow-origin'), null);
  const listedOrigin = await fetch(`${a.issuer}/token`, { method: 'POST', headers: { origin: APP }, body: form });
  assert.equal(listedOrigin.status, 200, 'the refused request did not spend the code');
  assert.equal(listedOrigin.headers.get('access-control-allow-origin'), APP);
  assert.deepEqual(listed(listedOrigin.headers.get('access-control-expose-headers') ?? undefined).sort(), [...EXPOSED].sort());
});

test('uploaded images answer other origins: their bytes, 304s and 404s, a preflight for a conditional GET, and Vary: Origin beside Accept', async (t) => {
  const a = await buildBlogApp(t, { corsOrigins: [APP] });
  const posted = await postForm(a, [
    ['data', JSON.stringify({ page: a.pageId, info_title: 'Shared' })],
    ['primaryImage', { file: await image('png', 40, 20), filename: 'shared.png' }],
  ]);
  assert.equal(posted.statusCode, 201, posted.body);
  const path = json(posted).data[0].info_img as string;
  const served = await a.app.inject({ url: path, headers: { origin: APP } });
  assert.equal(served.statusCode, 200);
  assert.equal(served.headers['access-control-allow-origin'], APP);
  assert.deepEqual(listed(String(served.headers['access-control-expose-headers'])).sort(), [...EXPOSED].sort());
  const again = await a.app.inject({ url: path, headers: { origin: APP, 'if-none-match': String(served.headers.etag) } });
  assert.equal(again.statusCode, 304);
  assert.equal(again.headers['access-control-allow-origin'], APP);
  const missing = await a.app.inject({ url: `/images/${'0'.repeat(32)}.png`, headers: { origin: APP } });
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.headers['access-control-allow-origin'], APP);
  assert.deepEqual(corsOf(await a.app.inject({ url: path, headers: { origin: OTHER } })), {});

  // If-None-Match is not a CORS-safelisted header: a browser asks first.
  const asked = await a.app.inject(preflight(path, 'GET', 'if-none-match'));
  assert.equal(asked.statusCode, 204);
  assert.equal(asked.headers['access-control-allow-origin'], APP);
  assert.deepEqual(listed(asked.headers['access-control-allow-methods'] as string).sort(), ['get', 'head']);

  // A format chosen by Accept varies on both: neither Vary may replace the other.
  const negotiated = await a.app.inject({ url: `${path}?format=auto&width=20`, headers: { origin: APP, accept: 'image/webp' } });
  assert.equal(negotiated.statusCode, 200, negotiated.body);
  assert.deepEqual(listed(String(negotiated.headers.vary)).sort(), ['accept', 'origin']);
});

test('CORS_ORIGINS is * by default, or a list of origins; anything else stops the start with one line', () => {
  const env = { DATA_DIR: '/tmp/cms-cors', DATABASE_URL: 'sqlite::memory:', COOKIE_SECRETS: 'x'.repeat(32) };
  assert.equal(loadConfig(env).corsOrigins, '*');
  assert.equal(loadConfig({ ...env, CORS_ORIGINS: '*' }).corsOrigins, '*');
  assert.deepEqual(loadConfig({ ...env, CORS_ORIGINS: 'https://App.example:443/, http://localhost:5173' }).corsOrigins, [
    'https://app.example',
    'http://localhost:5173',
  ]);
  for (const bad of [
    'app.example',
    'https://app.example/path',
    'https://*.example',
    'ftp://app.example',
    '*, https://app.example',
    ',',
    'null',
  ]) {
    assert.throws(
      () => loadConfig({ ...env, CORS_ORIGINS: bad }),
      (error: Error) => {
        assert.ok(error instanceof ConfigError, bad);
        assert.match(error.message, /^CORS_ORIGINS/);
        assert.doesNotMatch(error.message, /\n/);
        return true;
      },
    );
  }
});
