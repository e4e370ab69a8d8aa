import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { type BlogTestApp, buildBlogApp } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';
import type { DbHandle } from '../schema.js';
import { up } from './0011_search_folding.js';

/** Migrations see the database without the service's table types, as the migrator hands it to them. */
const untyped = (db: DbHandle) => db as unknown as Kysely<unknown>;

async function create(t: BlogTestApp, resource: 'page' | 'blog', payload: Record<string, unknown>) {
  const response = await t.app.inject({ method: 'POST', url: `/api/${resource}`, headers: t.site.headers, payload });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

async function found(t: BlogTestApp, resource: 'page' | 'blog', keywords: string): Promise<number[]> {
  const response = await t.app.inject({ url: `/api/${resource}?keywords=${encodeURIComponent(keywords)}`, headers: t.site.headers });
  assert.equal(response.statusCode, 200, response.body);
  return json(response).data.map((r: { id: number }) => r.id);
}

test('0011 folds the accents of stored search text, so PostgreSQL finds the records SQLite found', async (t) => {
  const app = await buildBlogApp(t);
  const page = await create(app, 'page', { page_usertitle: 'Menu', page_html_content: '<p>Caf&eacute; &amp; cr&#232;me</p>' });
  const blog = await create(app, 'blog', { page: app.pageId, info_title: 'Dessert', info_summary: 'Crème brûlée, naïve' });
  // What the service stored before: the text with its accents.
  await app.db.kysely.updateTable('pages').set({ search_text: 'Menu\nCafé & crème' }).where('page', '=', page.id).execute();
  await app.db.kysely.updateTable('blogs').set({ search_text: 'Dessert\nCrème brûlée, naïve' }).where('info_id', '=', blog.id).execute();
  if (app.db.dialect === 'postgres') {
    assert.deepEqual(await found(app, 'page', 'cafe'), [], 'the simple tsvector kept the accents');
    assert.deepEqual(await found(app, 'blog', 'creme brulee'), []);
  }

  const before = await app.app.inject({ url: `/api/page/${page.id}`, headers: app.site.headers });

  await up(untyped(app.db.kysely), app.db.dialect);

  assert.deepEqual(await found(app, 'page', 'cafe creme'), [page.id]);
  assert.deepEqual(await found(app, 'page', 'Café'), [page.id]);
  assert.deepEqual(await found(app, 'blog', 'creme brulee naive'), [blog.id]);
  assert.deepEqual(await found(app, 'blog', 'brûlée'), [blog.id]);
  const stored = await app.db.kysely.selectFrom('pages').select('search_text').where('page', '=', page.id).executeTakeFirstOrThrow();
  assert.equal(stored.search_text, 'Menu\nCafe & creme');
  const after = await app.app.inject({ url: `/api/page/${page.id}`, headers: app.site.headers });
  assert.equal(after.body, before.body, 'the record itself is untouched');
  assert.equal(after.headers.etag, before.headers.etag);
});
