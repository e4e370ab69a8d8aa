import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { type BlogTestApp, buildBlogApp } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';
import { keptListsOf } from '../../content/shared/kept-lists.js';
import type { DbHandle } from '../schema.js';
import { rebuildSearchText, up } from './0004_search_text.js';

/** Migrations see the database without the service's table types, as the migrator hands it to them. */
const untyped = (db: DbHandle) => db as unknown as Kysely<unknown>;

async function create(t: BlogTestApp, resource: 'page' | 'blog', payload: Record<string, unknown>): Promise<number> {
  const response = await t.app.inject({ method: 'POST', url: `/api/${resource}`, headers: t.site.headers, payload });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0].id;
}

async function found(t: BlogTestApp, resource: 'page' | 'blog', keywords: string): Promise<number[]> {
  const response = await t.app.inject({ url: `/api/${resource}?keywords=${encodeURIComponent(keywords)}`, headers: t.site.headers });
  assert.equal(response.statusCode, 200, response.body);
  return json(response)
    .data.map((r: { id: number }) => r.id)
    .sort((a: number, b: number) => a - b);
}

/** What the decoder before 0004 stored: only &amp; &lt; &gt; &quot; &#39; and &nbsp; were decoded. */
const STALE_PAGE_TEXT = 'Menu\nCaf&eacute; & cr&#232;me';
const STALE_BLOG_TEXT = 'Dessert\ncr&egrave;me br&ucirc;l&eacute;e';

test('0004 rebuilds stale search text, and keywords find the records again', async (t) => {
  const app = await buildBlogApp(t);
  const page = await create(app, 'page', { page_usertitle: 'Menu', page_html_content: '<p>Caf&eacute; &amp; cr&#232;me</p>' });
  const blog = await create(app, 'blog', {
    page: app.pageId,
    info_title: 'Dessert',
    info_fulltext: '<p>cr&egrave;me br&ucirc;l&eacute;e</p>',
  });
  await app.db.kysely.updateTable('pages').set({ search_text: STALE_PAGE_TEXT }).where('page', '=', page).execute();
  await app.db.kysely.updateTable('blogs').set({ search_text: STALE_BLOG_TEXT }).where('info_id', '=', blog).execute();
  assert.deepEqual(await found(app, 'page', 'café'), [], 'stale: the index holds "Caf" and "eacute"');
  assert.deepEqual(await found(app, 'blog', 'brûlée'), []);

  await up(untyped(app.db.kysely), app.db.dialect);
  // Run here by hand, not by the migrator, which counts what it runs: lists kept by the app before
  // it are not seen to be out of date (kept-lists.ts).
  keptListsOf(app.db.kysely).clear();

  assert.deepEqual(await found(app, 'page', 'café'), [page]);
  assert.deepEqual(await found(app, 'page', 'crème'), [page]);
  assert.deepEqual(await found(app, 'page', 'eacute'), [], 'the stale words are gone from the index');
  assert.deepEqual(await found(app, 'blog', 'crème brûlée'), [blog]);
  const stored = await app.db.kysely.selectFrom('pages').select('search_text').where('page', '=', page).executeTakeFirstOrThrow();
  assert.equal(stored.search_text, 'Menu\nCafe & creme', 'with accents folded (the rule of 0011, which 0004 applies too)');

  await up(untyped(app.db.kysely), app.db.dialect);
  assert.deepEqual(await found(app, 'page', 'café'), [page], 'running it again changes nothing');
});

test('0004 reaches every row when the table spans several batches', async (t) => {
  const app = await buildBlogApp(t);
  const pages = [app.pageId];
  for (let i = 0; i < 6; i++)
    pages.push(await create(app, 'page', { page_usertitle: `Menu ${i}`, page_html_content: '<p>Caf&eacute;</p>' }));
  await app.db.kysely.updateTable('pages').set({ search_text: 'Menu\nCaf&eacute;' }).where('page', '!=', app.pageId).execute();

  await rebuildSearchText(untyped(app.db.kysely), 2);

  assert.deepEqual(await found(app, 'page', 'café'), pages.slice(1), 'seven pages in batches of two, the first one unchanged');
  assert.deepEqual(await found(app, 'page', 'menu 5'), [pages[6]], 'each row gets its own text');
});
