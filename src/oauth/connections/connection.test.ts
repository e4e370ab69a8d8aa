import assert from 'node:assert/strict';
import { test } from 'node:test';
import { authorizeCode, connect, exchangeCode, startOAuthApp } from '../../../test/oauth.helpers.js';
import { sha256 } from '../../accounts/secrets.js';
import { purgeExpiredPayloads } from '../provider/oauth.adapter.js';
import { CODE_TTL_SECONDS, INTERACTION_TTL_SECONDS } from '../provider/provider.js';
import {
  dropUnfinishedConnections,
  expireLapsedConnections,
  listApplications,
  listConnections,
  revokeUserConnections,
} from './connection.service.js';

const DAY_MS = 24 * 60 * 60 * 1000;

test('clean-up: connections past their 90 days become expired and lose their grant; expired rows go', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a);
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  t.mock.timers.tick(2 * 3600 * 1000);
  assert.equal(await expireLapsedConnections(a.db.kysely), 0, 'still within 90 days');
  const purged = await purgeExpiredPayloads(a.db.kysely);
  assert.ok(purged >= 1, 'the access token (1 h) is gone');
  const models = (await a.db.kysely.selectFrom('oauth_payloads').select('model').execute()).map((r) => r.model).sort();
  assert.ok(!models.includes('AccessToken'));
  assert.ok(models.includes('RefreshToken') && models.includes('Grant'));

  t.mock.timers.tick(91 * DAY_MS);
  assert.equal(await expireLapsedConnections(a.db.kysely), 1);
  await purgeExpiredPayloads(a.db.kysely);
  const [connection] = await listConnections(a.db.kysely, a.site.siteId);
  assert.equal(connection?.status, 'expired');
  assert.equal(connection?.revoked_at, null);
  const left = await a.db.kysely.selectFrom('oauth_payloads').select('model').where('grant_id', 'is not', null).execute();
  assert.deepEqual(left, [], 'no token of the expired connection is left');
  const refreshed = await fetch(`${a.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', client_id: a.clientId, refresh_token: tokens.refresh_token }),
  });
  assert.equal(refreshed.status, 400);
});

test('an authorization whose code is never exchanged stays pending, is no application, and is removed once its code is dead', async (t) => {
  const a = await startOAuthApp(t);
  const unexchanged = await authorizeCode(a);
  const [pending] = await listConnections(a.db.kysely, a.site.siteId);
  assert.equal(pending?.status, 'pending', 'consent alone connects nothing');
  assert.equal(pending?.resource, a.base, 'the resource is recorded at consent');
  assert.deepEqual(await listApplications(a.db.kysely, a.site.siteId), []);
  const { grant_id: grantId } = await a.db.kysely
    .selectFrom('oauth_connections')
    .select('grant_id')
    .where('id', '=', pending!.id)
    .executeTakeFirstOrThrow();

  const { tokens } = await connect(a);
  const statuses = async () => (await listConnections(a.db.kysely, a.site.siteId)).map((c) => c.status).sort();
  assert.deepEqual(await statuses(), ['active', 'pending'], 'the code exchange activates its own connection only');
  const lifetime = INTERACTION_TTL_SECONDS + CODE_TTL_SECONDS;
  assert.equal(await dropUnfinishedConnections(a.db.kysely, lifetime), 0, 'its code may still be exchanged');

  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  t.mock.timers.tick((lifetime + 1) * 1000);
  assert.equal(await dropUnfinishedConnections(a.db.kysely, lifetime), 1);
  assert.deepEqual(await statuses(), ['active'], 'the unfinished one leaves no ended connection behind');
  const grantRows = await a.db.kysely
    .selectFrom('oauth_payloads')
    .select('model')
    .where((eb) => eb.or([eb('grant_id', '=', grantId), eb('id', '=', sha256(grantId))]))
    .execute();
  assert.deepEqual(grantRows, [], 'nor its grant or code');
  assert.equal((await exchangeCode(a, unexchanged.code, unexchanged.verifier)).status, 400);
  const read = await a.app.inject({ url: '/api/page', headers: { authorization: `Bearer ${tokens.access_token}` } });
  assert.equal(read.statusCode, 200, 'the finished one still works');
});

test('a pending connection that ends before its code is exchanged is gone, and the exchange then fails', async (t) => {
  const a = await startOAuthApp(t);
  const { code, verifier } = await authorizeCode(a);
  assert.equal(await revokeUserConnections(a.db.kysely, a.owner.id, a.site.siteId), 1);
  assert.deepEqual(await listConnections(a.db.kysely, a.site.siteId), []);
  const exchanged = await exchangeCode(a, code, verifier);
  assert.equal(exchanged.status, 400);
  assert.equal(exchanged.body.error, 'invalid_grant');
  assert.deepEqual(await listConnections(a.db.kysely, a.site.siteId), [], 'the failed exchange activates nothing');
});
