import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { createTestDatabase } from '../../../test/helpers.js';
import { authorizeCode, connect, exchangeCode, type OAuthTestApp, startOAuthApp, tokenRequest } from '../../../test/oauth.helpers.js';
import { listConnections } from '../connections/connection.service.js';

/**
 * Issue 11: a token request writes in one transaction (one fsync on SQLite, not four). These tests
 * read the database's statement log, BEGIN and COMMIT included, of one request at a time.
 */
async function startLoggedApp(t: TestContext) {
  const statements: string[] = [];
  const db = await createTestDatabase(t, {
    log: (event) => {
      if (event.level === 'query') statements.push(event.query.sql);
    },
  });
  const a = await startOAuthApp(t, { db });
  /** The statements made from the start of `request` to its answer. */
  async function logged<T>(request: () => Promise<T>): Promise<{ result: T; counts: Counts }> {
    statements.length = 0;
    const result = await request();
    return { result, counts: count(statements) };
  }
  return { a, logged };
}

interface Counts {
  begin: number;
  commit: number;
  rollback: number;
  writes: number;
  /** Writes made while no transaction was open: each its own commit. */
  autocommitted: number;
}

function count(statements: readonly string[]): Counts {
  const counts: Counts = { begin: 0, commit: 0, rollback: 0, writes: 0, autocommitted: 0 };
  let open = false;
  for (const sql of statements) {
    const verb = sql.trimStart().split(/\s/, 1)[0]!.toLowerCase();
    if (verb === 'begin') {
      counts.begin += 1;
      open = true;
    } else if (verb === 'commit' || verb === 'rollback') {
      counts[verb] += 1;
      open = false;
    } else if (verb === 'insert' || verb === 'update' || verb === 'delete') {
      counts.writes += 1;
      if (!open) counts.autocommitted += 1;
    }
  }
  return counts;
}

function refresh(a: OAuthTestApp, refreshToken: string, extra: Record<string, string> = {}) {
  return tokenRequest(a.issuer, { grant_type: 'refresh_token', client_id: a.clientId, refresh_token: refreshToken, ...extra });
}

async function connectionStatus(a: OAuthTestApp) {
  return (await listConnections(a.db.kysely, a.site.siteId))[0]?.status;
}

test('a code exchange, a refresh and a revocation each write in one transaction: one BEGIN, one COMMIT', async (t) => {
  const { a, logged } = await startLoggedApp(t);
  const { code, verifier } = await authorizeCode(a);

  const exchange = await logged(() => exchangeCode(a, code, verifier));
  assert.equal(exchange.result.status, 200, JSON.stringify(exchange.result.body));
  // Consume the code, store the access and the refresh token, touch the connection.
  assert.ok(exchange.counts.writes >= 4, `${exchange.counts.writes} writes`);
  assert.deepEqual(exchange.counts, { begin: 1, commit: 1, rollback: 0, writes: exchange.counts.writes, autocommitted: 0 });

  const rotated = await logged(() => refresh(a, String(exchange.result.body.refresh_token)));
  assert.equal(rotated.result.status, 200, JSON.stringify(rotated.result.body));
  assert.ok(rotated.counts.writes >= 4, `${rotated.counts.writes} writes`);
  assert.deepEqual(rotated.counts, { begin: 1, commit: 1, rollback: 0, writes: rotated.counts.writes, autocommitted: 0 });

  const revoked = await logged(() =>
    fetch(`${a.issuer}/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: String(rotated.result.body.refresh_token), client_id: a.clientId }),
    }),
  );
  assert.equal(revoked.result.status, 200);
  assert.ok(revoked.counts.writes >= 2, `${revoked.counts.writes} writes`);
  assert.deepEqual(revoked.counts, { begin: 1, commit: 1, rollback: 0, writes: revoked.counts.writes, autocommitted: 0 });
  assert.equal(await connectionStatus(a), 'revoked');
});

test('a replayed refresh token answers invalid_grant, and the revocation it caused is committed', async (t) => {
  const { a, logged } = await startLoggedApp(t);
  const { tokens } = await connect(a);
  const second = await refresh(a, tokens.refresh_token);
  assert.equal(second.status, 200);

  const replay = await logged(() => refresh(a, tokens.refresh_token));
  assert.equal(replay.result.status, 400);
  assert.equal(replay.result.body.error, 'invalid_grant');
  assert.ok(replay.counts.writes >= 1, 'the replay revoked something');
  assert.deepEqual(replay.counts, { begin: 1, commit: 1, rollback: 0, writes: replay.counts.writes, autocommitted: 0 });

  // Read afterwards, on PostgreSQL from another connection of the pool: committed, not merely written.
  assert.equal(await connectionStatus(a), 'revoked');
  const tokensLeft = await a.db.kysely
    .selectFrom('oauth_payloads')
    .select('model')
    .where('model', 'in', ['AccessToken', 'RefreshToken', 'Grant'])
    .execute();
  assert.deepEqual(tokensLeft, [], 'every token of the grant and the grant itself are gone');
  assert.equal((await refresh(a, String(second.body.refresh_token))).body.error, 'invalid_grant', 'the newest refresh token is dead');
});

test('a refresh refused after the rotation began is rolled back: the same refresh token still works', async (t) => {
  const { a, logged } = await startLoggedApp(t);
  const { tokens } = await connect(a);
  // The resource is checked after the old token is consumed and the new one stored.
  const refused = await logged(() => refresh(a, tokens.refresh_token, { resource: 'https://other.example' }));
  assert.equal(refused.result.status, 400);
  assert.equal(refused.result.body.error, 'invalid_target');
  assert.ok(refused.counts.writes >= 1, 'the rotation had begun');
  assert.deepEqual(refused.counts, { begin: 1, commit: 0, rollback: 1, writes: refused.counts.writes, autocommitted: 0 });

  const retried = await refresh(a, tokens.refresh_token);
  assert.equal(retried.status, 200, 'not taken for a replay');
  assert.equal(await connectionStatus(a), 'active');
  const refreshTokens = await a.db.kysely.selectFrom('oauth_payloads').select('consumed_at').where('model', '=', 'RefreshToken').execute();
  assert.equal(refreshTokens.length, 2, 'the consumed one and the new one: nothing of the refused rotation is left');
});
