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

test('an answer to credentials is private and revalidated, however they were sent; errors are not stored; public answers are not private', async (t) => {
  const { app, site } = await buildTestApp(t);
  const created = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'Mine' } });
  assert.equal(created.headers['cache-control'], 'private, no-cache');
  const id = JSON.parse(created.body).data[0].page as number;
  const ways: Array<[string, Record<string, string>, string]> = [
    ['Basic', site.headers, ''],
    ['X-Api-Key', { 'x-api-id': site.apiId, 'x-api-key': site.apiKey }, ''],
    ['query', {}, `apiID=${site.apiId}&apiKey=${site.apiKey}`],
  ];
  for (const [way, headers, query] of ways) {
    for (const path of [
      `/api/page/${id}`,
      '/api/page',
      '/webapps/api/blog',
      '/api/changes',
      `/api/page/${id}/revisions`,
      '/api/webhooks',
    ]) {
      const url = query ? `${path}?${query}` : path;
      const read = await app.inject({ url, headers });
      assert.equal(read.statusCode, 200, `${way} ${path}`);
      assert.equal(read.headers['cache-control'], 'private, no-cache', `${way} ${path}`);
      const again = await app.inject({ url, headers: { ...headers, 'if-none-match': String(read.headers.etag) } });
      assert.equal(again.statusCode, 304);
      assert.equal(again.headers['cache-control'], 'private, no-cache', `${way} ${path}: the 304 says what its 200 said`);
    }
  }
  for (const refused of [
    await app.inject({ url: '/api/page/999999', headers: site.headers }),
    await app.inject({ url: '/api/page' }),
    await app.inject({ url: '/api/page?zzz=1', headers: site.headers }),
  ]) {
    assert.equal(refused.headers['cache-control'], 'no-store', String(refused.statusCode));
  }
  for (const url of ['/api/openapi.json', '/healthz']) {
    assert.notEqual((await app.inject({ url, headers: site.headers })).headers['cache-control'], 'private, no-cache', url);
  }
});
