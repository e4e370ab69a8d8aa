import assert from 'node:assert/strict';
import { test } from 'node:test';
import { json } from '../../test/helpers.js';
import { connect, startOAuthApp } from '../../test/oauth.helpers.js';
import { sha256 } from '../accounts/secrets.js';

function bearer(token: string) {
  return { authorization: `Bearer ${token}` };
}

test("a token reads its own website only: another website's page is 404", async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a, { site: a.site.siteId });
  const other = await a.app.inject({ method: 'POST', url: '/api/page', headers: a.site2.headers, payload: { page_usertitle: 'B' } });
  const mine = await a.app.inject({ method: 'POST', url: '/api/page', headers: a.site.headers, payload: { page_usertitle: 'A' } });
  const otherId = json(other).data[0].page;
  const mineId = json(mine).data[0].page;
  assert.equal((await a.app.inject({ url: `/api/page/${otherId}`, headers: bearer(tokens.access_token) })).statusCode, 404);
  assert.equal((await a.app.inject({ url: `/webapps/api/page?id=${otherId}`, headers: bearer(tokens.access_token) })).json().meta.total, 0);
  assert.equal((await a.app.inject({ url: `/api/page/${mineId}`, headers: bearer(tokens.access_token) })).statusCode, 200);
  const list = await a.app.inject({ url: '/api/page', headers: bearer(tokens.access_token) });
  assert.deepEqual(
    json(list).data.map((p: { page: number }) => p.page),
    [mineId],
  );
});

test('a read-only token cannot write: 403 insufficient_scope; a write token can', async (t) => {
  const a = await startOAuthApp(t);
  const reader = (await connect(a, { scope: 'everything:read' })).tokens.access_token;
  const denied = await a.app.inject({ method: 'POST', url: '/api/page', headers: bearer(reader), payload: { page_usertitle: 'x' } });
  assert.equal(denied.statusCode, 403);
  assert.match(String(denied.headers['www-authenticate']), /error="insufficient_scope", scope="pages:write"/);
  assert.equal(
    json(denied).detail,
    'This operation needs the scope pages:write, which this access token was not granted: authorize again asking for scope pages:write.',
  );
  const writer = (await connect(a, { scope: 'everything:write' })).tokens.access_token;
  const created = await a.app.inject({ method: 'POST', url: '/api/page', headers: bearer(writer), payload: { page_usertitle: 'x' } });
  assert.equal(created.statusCode, 201);
  assert.equal((await a.app.inject({ url: '/api/page', headers: bearer(writer) })).statusCode, 200, 'write implies read');
  const products = (await connect(a, { scope: 'product:read product:write' })).tokens.access_token;
  assert.equal((await a.app.inject({ url: '/api/page', headers: bearer(products) })).statusCode, 403);
});

test('each token keeps its own scopes, whichever tokens were used before it in the process', async (t) => {
  const a = await startOAuthApp(t);
  const reader = (await connect(a, { scope: 'everything:read' })).tokens.access_token;
  const writer = (await connect(a, { scope: 'everything:write' })).tokens.access_token;
  const write = (token: string) =>
    a.app.inject({ method: 'POST', url: '/api/page', headers: bearer(token), payload: { page_usertitle: 'x' } }).then((r) => r.statusCode);
  // Alternating, so each token is read after the other has been (their claims are kept per process).
  for (let round = 0; round < 3; round++) {
    assert.equal(await write(writer), 201, `round ${round}: writer`);
    assert.equal(await write(reader), 403, `round ${round}: reader`);
  }
});

test('a token in the query string is ignored; unknown and malformed tokens are invalid_token', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a);
  const query = await a.app.inject({ url: `/api/page?access_token=${tokens.access_token}` });
  assert.equal(query.statusCode, 401);
  assert.doesNotMatch(String(query.headers['www-authenticate']), /invalid_token/, 'as if no credentials were sent');
  for (const authorization of ['Bearer nope', 'Bearer ', `Bearer ${tokens.refresh_token}`, `bearer ${tokens.access_token}x`]) {
    const response = await a.app.inject({ url: '/api/page', headers: { authorization } });
    assert.equal(response.statusCode, 401, authorization);
    assert.match(String(response.headers['www-authenticate']), /error="invalid_token"/, authorization);
  }
  assert.equal((await a.app.inject({ url: '/api/page', headers: { authorization: `bearer ${tokens.access_token}` } })).statusCode, 200);
});

test("using a token records the connection's last use", async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a);
  await a.db.kysely.updateTable('oauth_connections').set({ last_used_at: null }).execute();
  await a.app.inject({ url: '/api/page', headers: bearer(tokens.access_token) });
  const row = await a.db.kysely.selectFrom('oauth_connections').select('last_used_at').executeTakeFirstOrThrow();
  assert.match(String(row.last_used_at), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
});

test('a token past its expiry, or whose connection is past its lifetime or no longer active, is invalid_token', async (t) => {
  const a = await startOAuthApp(t);
  const past = '2000-01-01 00:00:00';
  const statusWith = async (token: string) => (await a.app.inject({ url: '/api/page', headers: bearer(token) })).statusCode;
  const grantOf = async (token: string) =>
    (
      await a.db.kysely
        .selectFrom('oauth_payloads')
        .select('grant_id')
        .where('model', '=', 'AccessToken')
        .where('id', '=', sha256(token))
        .executeTakeFirstOrThrow()
    ).grant_id ?? '';

  const expiring = (await connect(a)).tokens.access_token;
  assert.equal(await statusWith(expiring), 200);
  await a.db.kysely.updateTable('oauth_payloads').set({ expires_at: past }).where('model', '=', 'AccessToken').execute();
  assert.equal(await statusWith(expiring), 401, 'the token row has expired');

  const lapsing = (await connect(a)).tokens.access_token;
  assert.equal(await statusWith(lapsing), 200);
  await a.db.kysely
    .updateTable('oauth_connections')
    .set({ expires_at: past })
    .where('grant_id', '=', await grantOf(lapsing))
    .execute();
  assert.equal(await statusWith(lapsing), 401, 'the connection has lapsed');

  const ended = (await connect(a)).tokens.access_token;
  assert.equal(await statusWith(ended), 200);
  await a.db.kysely
    .updateTable('oauth_connections')
    .set({ status: 'expired' })
    .where('grant_id', '=', await grantOf(ended))
    .execute();
  assert.equal(await statusWith(ended), 401, 'the connection is not active');
});
