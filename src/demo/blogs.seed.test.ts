import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, CHANGE_LOG, json } from '../../test/helpers.js';
import { seedDemoBlogs } from './blogs.seed.js';

test('the demo blogs sit on the Blog page, one hidden and one held back until a later date', async (t) => {
  const { app, db, site } = await buildTestApp(t);
  const page = json(await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'Blog' } }))
    .data[0].page;
  const seeded = await seedDemoBlogs(db.kysely, CHANGE_LOG, site.siteId, page);
  assert.ok(seeded.length >= 4);
  const all = json(await app.inject({ url: `/api/blog?page=${page}`, headers: site.headers }));
  assert.equal(all.meta.total, seeded.length);
  assert.ok(all.data.some((b: { info_show: string }) => b.info_show === 'N'));
  const today = new Date().toISOString().slice(0, 10);
  assert.ok(all.data.some((b: { info_hideuntil: string }) => b.info_hideuntil > today));
  const visible = json(await app.inject({ url: '/api/blog?publicContentOnly=1', headers: site.headers }));
  assert.equal(visible.meta.total, seeded.length - 2);
  assert.deepEqual(
    visible.data.map((b: { info_title: string }) => b.info_title),
    ['Behind the scenes: our kitchen', 'Five tips for better sourdough', 'Welcome to our new blog'],
    'newest first',
  );
});
