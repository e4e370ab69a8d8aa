import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { buildTestApp, json } from '../../../test/helpers.js';
import { markNonAscii } from './0025_record_bytes_flag.js';

test('0025 marks the pages and blogs stored before it whose text has anything outside ASCII', async (t) => {
  const { app, db, site } = await buildTestApp(t);
  const titles = ['Plain title', 'Crème brûlée', 'Curly “quotes”', 'Emoji ☕'];
  for (const page_usertitle of titles) {
    const saved = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle } });
    assert.equal(saved.statusCode, 201, saved.body);
  }
  const blog = await app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: site.headers,
    payload: {
      page: json(await app.inject({ method: 'GET', url: '/api/page?pageSize=1', headers: site.headers })).data[0].page,
      info_title: 'Café',
    },
  });
  assert.equal(blog.statusCode, 201, blog.body);
  // As a database written before the column was: every flag 0.
  await db.kysely.updateTable('pages').set({ record_non_ascii: 0 }).execute();
  await db.kysely.updateTable('blogs').set({ record_non_ascii: 0 }).execute();

  await markNonAscii(db.kysely as unknown as Kysely<unknown>);

  const pages = await db.kysely.selectFrom('pages').select(['page_usertitle', 'record_non_ascii']).orderBy('page').execute();
  assert.deepEqual(
    pages.map((p) => [p.page_usertitle, p.record_non_ascii]),
    [
      ['Plain title', 0],
      ['Crème brûlée', 1],
      ['Curly “quotes”', 1],
      ['Emoji ☕', 1],
    ],
  );
  const blogs = await db.kysely.selectFrom('blogs').select(['info_title', 'record_non_ascii']).execute();
  assert.deepEqual(
    blogs.map((b) => [b.info_title, b.record_non_ascii]),
    [['Café', 1]],
  );
});
