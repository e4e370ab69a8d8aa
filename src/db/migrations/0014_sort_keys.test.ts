import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { buildBlogApp } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';
import type { DbHandle } from '../schema.js';
import { fillSortKeys } from './0014_sort_keys.js';

/** Migrations see the database without the service's table types, as the migrator hands it to them. */
const untyped = (db: DbHandle) => db as unknown as Kysely<unknown>;

test('0014 fills the sort keys of records stored before it, batch by batch, as a write would', async (t) => {
  const app = await buildBlogApp(t);
  const titles = ['Zebra', 'Élan', 'apple', 'Äpfel', '  Banana  split ', 'x'.repeat(100)];
  const pages: number[] = [];
  const blogs: number[] = [];
  for (const title of titles) {
    const page = await app.app.inject({
      method: 'POST',
      url: '/api/page',
      headers: app.site.headers,
      payload: { page_usertitle: title, page_menuname: title.toUpperCase() },
    });
    pages.push(json(page).data[0].id);
    const blog = await app.app.inject({
      method: 'POST',
      url: '/api/blog',
      headers: app.site.headers,
      payload: { page: app.pageId, info_title: title },
    });
    blogs.push(json(blog).data[0].id);
  }
  const db = app.db.kysely;
  const written = {
    pages: await db.selectFrom('pages').select(['page', 'title_sort_key', 'menutext_sort_key']).orderBy('page').execute(),
    blogs: await db.selectFrom('blogs').select(['info_id', 'title_sort_key']).orderBy('info_id').execute(),
  };
  assert.deepEqual(
    written.pages.filter((p) => pages.includes(p.page)).map((p) => p.title_sort_key),
    ['zebra', 'elan', 'apple', 'apfel', 'banana split', 'x'.repeat(64)],
    'the write path folds case and accents, white space, and cuts to 64 characters',
  );
  // What records stored before the migration have: no keys.
  await db.updateTable('pages').set({ title_sort_key: '', menutext_sort_key: '' }).execute();
  await db.updateTable('blogs').set({ title_sort_key: '' }).execute();

  await fillSortKeys(untyped(db), 2);

  assert.deepEqual(
    await db.selectFrom('pages').select(['page', 'title_sort_key', 'menutext_sort_key']).orderBy('page').execute(),
    written.pages,
  );
  assert.deepEqual(await db.selectFrom('blogs').select(['info_id', 'title_sort_key']).orderBy('info_id').execute(), written.blogs);
  const listed = await app.app.inject({ url: '/api/blog?orderBy=title&fields=id', headers: app.site.headers });
  assert.deepEqual(
    json(listed).data.map((b: { id: number }) => b.id),
    [3, 2, 4, 1, 5, 0].map((i) => blogs[i]),
    'listed by title again',
  );
});
