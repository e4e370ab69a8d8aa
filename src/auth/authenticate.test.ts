import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers.js';
import { formatTimestamp } from '../db/time.js';
import { lastUseIsStale } from './principal.js';

const ago = (now: Date, ms: number) => formatTimestamp(new Date(now.getTime() - ms));

test('a last use is due to be written again once more than 10 minutes old, to the second', () => {
  const now = new Date('2026-11-24T12:00:00.400Z');
  assert.equal(lastUseIsStale(null, now), true, 'never used');
  assert.equal(lastUseIsStale(ago(now, 10 * 60_000 + 1000), now), true);
  assert.equal(lastUseIsStale(ago(now, 10 * 60_000), now), false, 'exactly 10 minutes');
  assert.equal(lastUseIsStale(ago(now, 60_000), now), false);
  assert.equal(lastUseIsStale(formatTimestamp(now), now), false);
  assert.equal(lastUseIsStale('2000-01-01 00:00:00', now), true);
});

test("an API key's last use is written when it is older than 10 minutes, and not otherwise", async (t) => {
  const a = await buildTestApp(t);
  const lastUse = async () =>
    (await a.db.kysely.selectFrom('api_credentials').select('last_used_at').where('api_id', '=', a.site.apiId).executeTakeFirstOrThrow())
      .last_used_at;
  const setLastUse = (value: string) =>
    a.db.kysely.updateTable('api_credentials').set({ last_used_at: value }).where('api_id', '=', a.site.apiId).execute();
  const get = async () => assert.equal((await a.app.inject({ url: '/api/page', headers: a.site.headers })).statusCode, 200);

  const recent = ago(new Date(), 60_000);
  await setLastUse(recent);
  await get();
  assert.equal(await lastUse(), recent, 'used a minute ago: not written');

  await setLastUse('2000-01-01 00:00:00');
  await get();
  const written = await lastUse();
  assert.ok(written && written > ago(new Date(), 5000), `written now: ${written}`);
});
