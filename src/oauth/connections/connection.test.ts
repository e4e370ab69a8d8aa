import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connect, startOAuthApp } from '../../../test/oauth.helpers.js';
import { purgeExpiredPayloads } from '../provider/oauth.adapter.js';
import { expireLapsedConnections, listConnections } from './connection.service.js';

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
