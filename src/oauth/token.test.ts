import assert from 'node:assert/strict';
import { test } from 'node:test';
import { json } from '../../test/helpers.js';
import { connect, REDIRECT_URI, startOAuthApp, tokenRequest } from '../../test/oauth.helpers.js';

test('code exchange answers exactly the spec fields, with no-store', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens, response } = await connect(a, { scope: 'everything:read product:read' });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('cache-control'), 'no-store');
  assert.deepEqual(Object.keys(tokens).sort(), [
    'access_token',
    'expires_in',
    'refresh_token',
    'refresh_token_expires_in',
    'scope',
    'token_type',
  ]);
  assert.equal((tokens as Record<string, unknown>).token_type, 'Bearer');
  assert.equal((tokens as Record<string, unknown>).expires_in, 3600);
  assert.equal((tokens as Record<string, unknown>).refresh_token_expires_in, 7776000);
  assert.equal(tokens.scope, 'everything:read product:read');
  const pages = await a.app.inject({ url: '/api/page', headers: { authorization: `Bearer ${tokens.access_token}` } });
  assert.equal(pages.statusCode, 200, pages.body);
  assert.equal(json(pages).meta.total, 0);
  void REDIRECT_URI;
  void tokenRequest;
});
