import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'kysely';
import { json, TEST_DATABASE_URL } from '../../../test/helpers.js';
import {
  authorizeCode,
  authorizeUrl,
  connect,
  exchangeCode,
  type OAuthTestApp,
  pkcePair,
  REDIRECT_URI,
  startOAuthApp,
  tokenRequest,
} from '../../../test/oauth.helpers.js';
import { now } from '../../db/time.js';
import { activateConnection, endGrant } from '../connections/connection.repository.js';
import { listConnections } from '../connections/connection.service.js';
import { KyselyAdapter } from './oauth.adapter.js';

const DAY_MS = 24 * 60 * 60 * 1000;

function bearer(token: string) {
  return { authorization: `Bearer ${token}` };
}

async function pageStatus(a: OAuthTestApp, token: string): Promise<number> {
  return (await a.app.inject({ url: '/api/page', headers: bearer(token) })).statusCode;
}

function refresh(a: OAuthTestApp, refreshToken: string, extra: Record<string, string> = {}) {
  return tokenRequest(a.issuer, { grant_type: 'refresh_token', client_id: a.clientId, refresh_token: refreshToken, ...extra });
}

async function connectionStatus(a: OAuthTestApp) {
  const [connection] = await listConnections(a.db.kysely, a.site.siteId);
  return connection?.status;
}

test('code exchange answers exactly the spec fields, with no-store', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens, response } = await connect(a, { scope: 'everything:read product:read' });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('cache-control'), 'no-store');
  assert.deepEqual(Object.keys(response.body).sort(), [
    'access_token',
    'expires_in',
    'refresh_token',
    'refresh_token_expires_in',
    'scope',
    'token_type',
  ]);
  assert.equal(response.body.token_type, 'Bearer');
  assert.equal(response.body.expires_in, 3600);
  assert.equal(response.body.refresh_token_expires_in, 7776000);
  assert.equal(tokens.scope, 'everything:read product:read');
  assert.ok(tokens.access_token.length >= 43, 'at least 256 bits');
  const pages = await a.app.inject({ url: '/api/page', headers: bearer(tokens.access_token) });
  assert.equal(pages.statusCode, 200, pages.body);
  assert.equal(json(pages).meta.total, 0);
});

test('tokens are stored hashed: neither a token, a code nor a session id appears in the database', async (t) => {
  const a = await startOAuthApp(t);
  const { code, verifier, browser } = await authorizeCode(a);
  // A second authorization in the same browser begins in its session: the interaction names it.
  const { challenge } = await pkcePair();
  const consent = await browser.follow(authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge }));
  assert.equal(consent.status, 200, 'the signed-in browser is at the next step');
  const session = browser.cookie('_session');
  assert.ok(session);
  const interactions = await a.db.kysely.selectFrom('oauth_payloads').select('payload').where('model', '=', 'Interaction').execute();
  assert.ok(
    interactions.some((r) => r.payload.includes('"session"')),
    'an interaction of the session is stored',
  );
  assert.ok(!JSON.stringify(interactions).includes(session), 'the session cookie’s value is not');
  const withCode = JSON.stringify(await a.db.kysely.selectFrom('oauth_payloads').selectAll().execute());
  assert.ok(!withCode.includes(code));
  const tokens = (await exchangeCode(a, code, verifier)).body;
  const rows = await a.db.kysely.selectFrom('oauth_payloads').selectAll().execute();
  const dump = JSON.stringify(rows);
  assert.ok(rows.some((r) => r.model === 'AccessToken') && rows.some((r) => r.model === 'RefreshToken'));
  assert.ok(!dump.includes(String(tokens.access_token)));
  assert.ok(!dump.includes(String(tokens.refresh_token)));
});

test('a code is single use: the second exchange fails and revokes what the first issued', async (t) => {
  const a = await startOAuthApp(t);
  const { code, verifier } = await authorizeCode(a);
  const first = await exchangeCode(a, code, verifier);
  assert.equal(first.status, 200);
  const again = await exchangeCode(a, code, verifier);
  assert.equal(again.status, 400);
  assert.equal(again.body.error, 'invalid_grant');
  assert.equal(again.headers.get('cache-control'), 'no-store');
  assert.equal(await pageStatus(a, String(first.body.access_token)), 401, 'the first access token is dead');
  assert.equal((await refresh(a, String(first.body.refresh_token))).body.error, 'invalid_grant');
  assert.equal(await connectionStatus(a), 'revoked');
});

test('of concurrent exchanges of one code exactly one succeeds', async (t) => {
  const a = await startOAuthApp(t);
  const { code, verifier } = await authorizeCode(a);
  const results = await Promise.all([1, 2, 3].map(() => exchangeCode(a, code, verifier)));
  assert.deepEqual(results.map((r) => r.status).sort(), [200, 400, 400]);
});

type Session = Awaited<ReturnType<typeof openTransaction>>;

/** A transaction of its own on the test's PostgreSQL database, and its backend's pid. */
async function openTransaction(a: OAuthTestApp) {
  const trx = await a.db.kysely.startTransaction().execute();
  const pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!.pid;
  return { trx, pid, adapter: (model: string) => new KyselyAdapter(trx, model) };
}

/**
 * Runs `body` with a transaction per name, each on a connection of its own. Whatever a failed
 * assertion leaves open is rolled back, so the database can close.
 */
async function withSessions<K extends string>(a: OAuthTestApp, names: readonly K[], body: (sessions: Record<K, Session>) => Promise<void>) {
  const sessions: Session[] = [];
  try {
    for (const _ of names) sessions.push(await openTransaction(a));
    await body(Object.fromEntries(names.map((name, i) => [name, sessions[i]])) as Record<K, Session>);
  } finally {
    await Promise.all(
      sessions.map((s) =>
        s.trx
          .rollback()
          .execute()
          .catch(() => undefined),
      ),
    );
  }
}

/**
 * Resolves once the backend `pid` waits for a lock: the statement it runs is blocked. PostgreSQL
 * tells no one, so pg_locks is polled; the attempts only turn a hang into a failure.
 */
async function waiting(a: OAuthTestApp, pid: number, what: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const blocked = await sql<{ n: number }>`select count(*)::int as n from pg_locks where pid = ${pid} and not granted`.execute(
      a.db.kysely,
    );
    if (blocked.rows[0]!.n > 0) return;
    assert.ok(attempt < 1000, what);
    await delay(20); // the interval of the poll, not a wait for the event
  }
}

async function assertGrantEnded(a: OAuthTestApp, grantId: string) {
  assert.equal(await connectionStatus(a), 'revoked');
  const left = await sql<{ n: number }>`select count(*)::int as n from oauth_payloads where grant_id = ${grantId}`.execute(a.db.kysely);
  assert.equal(left.rows[0]!.n, 0);
}

async function grantOf(a: OAuthTestApp): Promise<string> {
  return (await a.db.kysely.selectFrom('oauth_connections').select('grant_id').executeTakeFirstOrThrow()).grant_id;
}

// Three exchanges of one code at once, as each runs in the database: the winner redeems it, one
// loser's redeeming UPDATE waits for the winner's row lock (and keeps the row locked once it has
// re-checked it), and a later loser, which read the code as consumed, revokes the grant through
// oidc-provider's revoke, model by model. Without one lock per grant taken before any row lock,
// PostgreSQL found a deadlock and one exchange answered 500 (about one run in ten).
test('PostgreSQL: the losers of a race to redeem one code take turns revoking its grant', { skip: !TEST_DATABASE_URL }, async (t) => {
  const a = await startOAuthApp(t);
  const { code } = await authorizeCode(a);
  const grantId = await grantOf(a);
  await withSessions(a, ['winner', 'loser', 'revoker'], async ({ winner, loser, revoker }) => {
    await winner.adapter('AuthorizationCode').consume(code);
    // The winner's token request goes on to issue the grant's first token, which activates it.
    await activateConnection(winner.trx, grantId);
    const lost = assert.rejects(loser.adapter('AuthorizationCode').consume(code), { name: 'InvalidGrant' });
    await waiting(a, loser.pid, 'the second redemption waits for the first');
    const revoked = (async () => {
      await revoker.adapter('AccessToken').revokeByGrantId(grantId);
      await revoker.adapter('AuthorizationCode').revokeByGrantId(grantId);
    })();
    await waiting(a, revoker.pid, 'the revocation waits for the redemption');
    await winner.trx.commit().execute();
    await lost;
    await loser.trx.commit().execute();
    await revoked;
    await revoker.trx.commit().execute();
  });
  await assertGrantEnded(a, grantId);
});

test('PostgreSQL: a revocation model by model and one over the whole grant take turns', { skip: !TEST_DATABASE_URL }, async (t) => {
  // The first has deleted the row the second reaches last, the second waits on it, and the first
  // goes on to a row the second holds: without the grant's lock, a deadlock.
  const a = await startOAuthApp(t);
  await connect(a);
  const grantId = await grantOf(a);
  const rows = await sql<{ model: string }>`select model from oauth_payloads where grant_id = ${grantId} order by ctid`.execute(
    a.db.kysely,
  );
  const models = rows.rows.map((r) => r.model);
  assert.ok(models.length >= 2, `the grant has a code and tokens (${models.join(', ')})`);
  await withSessions(a, ['byModel', 'whole'], async ({ byModel, whole }) => {
    await byModel.adapter(models.at(-1)!).revokeByGrantId(grantId);
    const ended = endGrant(whole.trx, grantId, 'revoked', now());
    await waiting(a, whole.pid, 'endGrant waits for the transaction that has begun revoking the grant');
    await byModel.adapter(models[0]!).revokeByGrantId(grantId);
    await byModel.trx.commit().execute();
    await ended;
    await whole.trx.commit().execute();
  });
  await assertGrantEnded(a, grantId);
});

test('a missing code_verifier is invalid_request, a wrong one invalid_grant, and the code still works with the right one', async (t) => {
  const a = await startOAuthApp(t);
  const { code, verifier } = await authorizeCode(a);
  // RFC 7636 §4.6: a verifier that does not match is invalid_grant.
  const wrong = await exchangeCode(a, code, `${verifier.slice(0, -1)}${verifier.endsWith('A') ? 'B' : 'A'}`);
  assert.equal(wrong.status, 400);
  assert.equal(wrong.body.error, 'invalid_grant');
  // RFC 6749 §5.2: a required parameter missing (or empty) is invalid_request, whatever the code.
  const without = { grant_type: 'authorization_code', client_id: a.clientId, redirect_uri: REDIRECT_URI };
  for (const form of [
    { ...without, code },
    { ...without, code, code_verifier: '' },
    { ...without, code: 'no-such-code' },
  ]) {
    const missing = await tokenRequest(a.issuer, form);
    assert.equal(missing.status, 400, JSON.stringify(form));
    assert.deepEqual(missing.body, { error: 'invalid_request', error_description: "missing required parameter 'code_verifier'" });
    assert.equal(missing.headers.get('cache-control'), 'no-store');
  }
  assert.equal((await exchangeCode(a, code, verifier)).status, 200);
});

test('a token or revocation request without client_id says that client_id is missing', async (t) => {
  const a = await startOAuthApp(t);
  const { code, verifier } = await authorizeCode(a);
  const exchange = await tokenRequest(a.issuer, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
  });
  assert.equal(exchange.status, 400);
  assert.equal(exchange.body.error, 'invalid_request');
  assert.match(String(exchange.body.error_description), /missing required parameter 'client_id'/);
  assert.equal(exchange.headers.get('www-authenticate'), null);
  const revoke = await fetch(`${a.issuer}/revoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: 'anything' }),
  });
  assert.equal(revoke.status, 400);
  assert.match(String(((await revoke.json()) as { error_description?: string }).error_description), /client_id/);
});

test('the code is bound to its client and redirect URI', async (t) => {
  const a = await startOAuthApp(t);
  const { createClient } = await import('../clients/client.service.js');
  const other = await createClient(a.db.kysely, { name: 'Other', redirectUris: [REDIRECT_URI] });
  const { code, verifier } = await authorizeCode(a);
  const foreign = await exchangeCode(a, code, verifier, { client_id: other.clientId });
  assert.equal(foreign.body.error, 'invalid_grant');
  const elsewhere = await exchangeCode(a, code, verifier, { redirect_uri: 'https://app.example/other' });
  assert.equal(elsewhere.body.error, 'invalid_grant');
  const unknown = await exchangeCode(a, code, verifier, { client_id: 'nobody' });
  assert.equal(unknown.status, 401);
  assert.equal(unknown.body.error, 'invalid_client');
});

test('the exchange may name only the granted resource, and the verifier must have the RFC 7636 form', async (t) => {
  const a = await startOAuthApp(t);
  const first = await authorizeCode(a);
  const other = await exchangeCode(a, first.code, first.verifier, { resource: 'https://other.example' });
  assert.equal(other.status, 400);
  assert.equal(other.body.error, 'invalid_target');
  for (const bad of ['short', '!'.repeat(43), 'a'.repeat(129)]) {
    const { code } = await authorizeCode(a);
    const response = await exchangeCode(a, code, bad);
    assert.equal(response.status, 400, bad);
    assert.equal(response.body.error, 'invalid_request', bad);
  }
  const { code, verifier } = await authorizeCode(a);
  const named = await exchangeCode(a, code, verifier, { resource: a.base });
  assert.equal(named.status, 200, JSON.stringify(named.body));
});

test('a refresh token works only for its own client', async (t) => {
  const a = await startOAuthApp(t);
  const { createClient } = await import('../clients/client.service.js');
  const other = await createClient(a.db.kysely, { name: 'Other', redirectUris: [REDIRECT_URI] });
  const { tokens } = await connect(a);
  const stolen = await tokenRequest(a.issuer, {
    grant_type: 'refresh_token',
    client_id: other.clientId,
    refresh_token: tokens.refresh_token,
  });
  assert.equal(stolen.status, 400);
  assert.equal(stolen.body.error, 'invalid_grant');
  assert.equal((await refresh(a, tokens.refresh_token)).status, 200, 'the owner client still can');
});

test('a code expires after 60 seconds', async (t) => {
  const a = await startOAuthApp(t);
  const { code, verifier } = await authorizeCode(a);
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  t.mock.timers.tick(61_000);
  const late = await exchangeCode(a, code, verifier);
  assert.equal(late.status, 400);
  assert.equal(late.body.error, 'invalid_grant');
});

test('token endpoint errors are RFC 6749 JSON: form bodies only, known grant types only', async (t) => {
  const a = await startOAuthApp(t);
  const asJson = await fetch(`${a.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'refresh_token', client_id: a.clientId, refresh_token: 'x' }),
  });
  assert.equal(asJson.status, 400);
  assert.equal(((await asJson.json()) as { error: string }).error, 'invalid_request');
  for (const grant_type of ['password', 'client_credentials', 'implicit']) {
    const response = await tokenRequest(a.issuer, { grant_type, client_id: a.clientId, username: 'a', password: 'b' });
    assert.equal(response.status, 400, grant_type);
    assert.equal(response.body.error, 'unsupported_grant_type', grant_type);
  }
  const browserLike = await fetch(`${a.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    body: 'grant_type=refresh_token&client_id=x&refresh_token=y',
  });
  assert.match(String(browserLike.headers.get('content-type')), /json/, 'JSON even when HTML is preferred');
});

test('refresh rotates: the new pair works, the old refresh token is dead', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a);
  const second = await refresh(a, tokens.refresh_token);
  assert.equal(second.status, 200);
  assert.equal(second.body.refresh_token_expires_in, 7776000);
  assert.equal(second.body.expires_in, 3600);
  assert.equal(second.body.scope, 'everything:read');
  assert.notEqual(second.body.refresh_token, tokens.refresh_token);
  assert.equal(await pageStatus(a, String(second.body.access_token)), 200);
  const third = await refresh(a, String(second.body.refresh_token));
  assert.equal(third.status, 200);
});

test('a rotated refresh token used again revokes the whole connection, newest tokens included', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a);
  const second = await refresh(a, tokens.refresh_token);
  const replay = await refresh(a, tokens.refresh_token);
  assert.equal(replay.status, 400);
  assert.equal(replay.body.error, 'invalid_grant');
  assert.equal(await pageStatus(a, String(second.body.access_token)), 401, 'newest access token dead');
  assert.equal((await refresh(a, String(second.body.refresh_token))).body.error, 'invalid_grant', 'newest refresh token dead');
  assert.equal(await connectionStatus(a), 'revoked');
});

test('two concurrent refreshes with one token: at most one succeeds, and the replay ends the connection', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a);
  const results = await Promise.all([refresh(a, tokens.refresh_token), refresh(a, tokens.refresh_token)]);
  const ok = results.filter((r) => r.status === 200);
  assert.ok(ok.length <= 1, `${ok.length} refreshes succeeded`);
  for (const r of results.filter((r) => r.status !== 200)) assert.equal(r.body.error, 'invalid_grant');
  assert.equal(await connectionStatus(a), 'revoked');
  for (const r of ok) {
    assert.equal(await pageStatus(a, String(r.body.access_token)), 401, 'tokens minted by the racing winner are dead too');
    assert.equal((await refresh(a, String(r.body.refresh_token))).body.error, 'invalid_grant');
  }
});

test('refresh may narrow the scope of its own tokens only; the grant keeps the approved scope, never more', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a, { scope: 'everything:read product:read' });
  const wider = await refresh(a, tokens.refresh_token, { scope: 'everything:read everything:write' });
  assert.equal(wider.status, 400);
  assert.equal(wider.body.error, 'invalid_scope');
  const narrower = await refresh(a, tokens.refresh_token, { scope: 'product:read' });
  assert.equal(narrower.status, 200, JSON.stringify(narrower.body));
  assert.equal(narrower.body.scope, 'product:read');
  assert.equal(await pageStatus(a, String(narrower.body.access_token)), 403, 'product:read cannot read pages');
  // RFC 6749 §6: the narrower scope was for that refresh's tokens; the grant keeps what was approved.
  const back = await refresh(a, String(narrower.body.refresh_token), { scope: 'everything:read' });
  assert.equal(back.status, 200, JSON.stringify(back.body));
  assert.equal(back.body.scope, 'everything:read');
  assert.equal(await pageStatus(a, String(back.body.access_token)), 200);
  const all = await refresh(a, String(back.body.refresh_token));
  assert.equal(all.body.scope, 'everything:read product:read', 'without scope: everything granted');
  const [connection] = await listConnections(a.db.kysely, a.site.siteId);
  assert.deepEqual(connection?.scopes, ['everything:read', 'product:read'], 'the connection is unchanged');
  const beyond = await refresh(a, String(all.body.refresh_token), { scope: 'everything:write' });
  assert.equal(beyond.body.error, 'invalid_scope', 'never more than granted');
});

test('each refresh restarts the 90 days; 91 idle days end the connection', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a);
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  let current = tokens.refresh_token;
  for (const days of [60, 80, 80]) {
    t.mock.timers.tick(days * DAY_MS);
    const next = await refresh(a, current);
    assert.equal(next.status, 200, `refresh after ${days} more days`);
    assert.equal(next.body.refresh_token_expires_in, 7776000);
    current = String(next.body.refresh_token);
  }
  const [connection] = await listConnections(a.db.kysely, a.site.siteId);
  assert.equal(connection?.status, 'active');
  t.mock.timers.tick(91 * DAY_MS);
  const late = await refresh(a, current);
  assert.equal(late.status, 400);
  assert.equal(late.body.error, 'invalid_grant');
  assert.equal(await connectionStatus(a), 'expired');
});

test('an access token expires after an hour', async (t) => {
  const a = await startOAuthApp(t);
  // The token is issued between these two readings, however long the flow takes on a busy machine:
  // still valid 3,599 s after the first, expired 3,601 s after the second.
  const before = Date.now();
  const { tokens } = await connect(a);
  const after = Date.now();
  t.mock.timers.enable({ apis: ['Date'], now: before });
  t.mock.timers.tick(3599_000);
  assert.equal(await pageStatus(a, tokens.access_token), 200);
  t.mock.timers.setTime(after + 3601_000);
  assert.equal(await pageStatus(a, tokens.access_token), 401);
});

test('RFC 7009: revoking either token ends the connection; unknown tokens are fine', async (t) => {
  const a = await startOAuthApp(t);
  const revoke = (token: string, hint?: string) =>
    fetch(`${a.issuer}/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, client_id: a.clientId, ...(hint ? { token_type_hint: hint } : {}) }),
    });
  const first = (await connect(a)).tokens;
  assert.equal((await revoke(first.access_token)).status, 200);
  assert.equal(await pageStatus(a, first.access_token), 401);
  assert.equal((await refresh(a, first.refresh_token)).body.error, 'invalid_grant');

  const second = (await connect(a)).tokens;
  assert.equal((await revoke(second.refresh_token, 'refresh_token')).status, 200);
  assert.equal(await pageStatus(a, second.access_token), 401);
  assert.equal((await revoke('not-a-token')).status, 200);
  const statuses = (await listConnections(a.db.kysely, a.site.siteId)).map((c) => c.status);
  assert.deepEqual(statuses, ['revoked', 'revoked']);
});

test("RFC 7009: a client cannot revoke another client's token", async (t) => {
  const a = await startOAuthApp(t);
  const { createClient } = await import('../clients/client.service.js');
  const other = await createClient(a.db.kysely, { name: 'Other', redirectUris: [REDIRECT_URI] });
  const { tokens } = await connect(a);
  const response = await fetch(`${a.issuer}/revoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: tokens.refresh_token, client_id: other.clientId }),
  });
  assert.equal(response.status, 200, 'RFC 7009 §2.2: answered as if revoked, but nothing happens');
  assert.equal(await pageStatus(a, tokens.access_token), 200, 'still valid');
  assert.equal(await connectionStatus(a), 'active');
});

test('a client_id holding a NUL character names no client: invalid_client, never a 500 (PostgreSQL cannot store it)', async (t) => {
  const a = await startOAuthApp(t);
  const revoked = await fetch(`${a.issuer}/revoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: 'x'.repeat(43), token_type_hint: 'refresh_token', client_id: '\u0000' }),
  });
  assert.equal(revoked.status, 401);
  assert.equal(((await revoked.json()) as { error: string }).error, 'invalid_client');
  const token = await tokenRequest(a.issuer, { grant_type: 'refresh_token', client_id: `${a.clientId}\u0000`, refresh_token: 'x' });
  assert.equal(token.status, 401);
  assert.equal(token.body.error, 'invalid_client');
});
