import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { Kysely } from 'kysely';
import { buildBlogApp } from '../../../test/blog-fixtures.js';
import { createEmptyPostgresDatabase, json, TEST_DATABASE_URL } from '../../../test/helpers.js';
import { assertEveryRecordStored, storedAndBuilt } from '../../../test/stored-records.js';
import { createSite } from '../../accounts/account.service.js';
import { BLOG_FIELDS, type BlogField } from '../../content/blogs/blog.fields.js';
import { PAGE_FIELDS, type PageField } from '../../content/pages/page.fields.js';
import { createDatabase, type Db } from '../database.js';
import { migrateUpTo } from '../migrate.js';
import type { DbHandle } from '../schema.js';
import { rebuildStoredRecords } from './0008_stored_records.js';

/** Migrations see the database without the service's table types, as the migrator hands it to them. */
const untyped = (db: DbHandle) => db as unknown as Kysely<unknown>;

/** A database of its own with nothing migrated yet (an in-memory SQLite, or a PostgreSQL database). */
async function unmigrated(t: TestContext): Promise<Db> {
  if (TEST_DATABASE_URL) return (await createEmptyPostgresDatabase(t)).open();
  const db = createDatabase('sqlite::memory:');
  t.after(() => db.close());
  return db;
}

const blank = <F extends string>(fields: Record<F, { kind: string }>) =>
  Object.fromEntries(
    Object.entries<{ kind: string }>(fields).map(([f, s]) => [f, s.kind === 'int' || s.kind === 'bool' ? 0 : '']),
  ) as Record<F, string | number>;

test('0008 stores the record JSON and ETag of every page and blog written before it', async (t) => {
  const db = await unmigrated(t);
  await migrateUpTo(db, '0007_console');
  const site = await createSite(db.kysely, 'Before 0008');
  const { page: _page, ...pageBlank } = blank(PAGE_FIELDS) as Record<PageField, string | number>;
  const pages: number[] = [];
  for (const [i, fields] of [
    { page_usertitle: 'Home', page_crop_aspect: 1 },
    { page_usertitle: 'Café “quoted” \\ <b>', page_html_content: '<p>a\nb\tc</p>', page_privacy: 1 },
    { page_usertitle: 'Third', page_crop_aspect_thumbs: 1, page_lastmodified: '2024-05-06 07:08:09' },
  ].entries()) {
    const row = await db.kysely
      .insertInto('pages')
      .values({ ...pageBlank, page_alias: `p${i}`, ...fields, site_id: site.id, search_text: '' } as never)
      .returning('page')
      .executeTakeFirstOrThrow();
    pages.push(row.page);
  }
  const { info_id: _id, ...blogBlank } = blank(BLOG_FIELDS) as Record<BlogField, string | number>;
  for (const [i, fields] of [
    { info_show: 'Y', info_img_json: '{"width":4,"height":3,"bytes":99,"type":"image/png"}', info_more_images: '["/a.jpg","/b.jpg"]' },
    { info_show: 'N', info_blog_comments_on: 1, info_more_images: 'not json' },
    { info_show: '', info_img_json: 'null', info_more_images: '[1,"/c.jpg"]', info_title: 'Ünïcode' },
  ].entries()) {
    await db.kysely
      .insertInto('blogs')
      .values({ ...blogBlank, page: pages[0], info_filename: `b${i}`, cid: site.id, ...fields, site_id: site.id, search_text: '' } as never)
      .execute();
  }

  assert.deepEqual(await migrateUpTo(db, '0008_stored_records'), ['0008_stored_records']);

  assert.equal(await assertEveryRecordStored(db.kysely), 6, 'three pages and three blogs, each checked');
  // Read as the table holds it: the service's reads expect the columns of later migrations.
  const stored = await db.kysely.selectFrom('pages').select('record_json').where('page', '=', pages[1]!).executeTakeFirstOrThrow();
  assert.equal(JSON.parse(stored.record_json).page_usertitle, 'Café “quoted” \\ <b>');
  assert.equal(JSON.parse(stored.record_json).page_crop_aspect, false);
});

test('rebuildStoredRecords walks every batch, rewrites only what is stale, and a second run changes nothing', async (t) => {
  const app = await buildBlogApp(t);
  const ids = [app.pageId];
  for (let i = 0; i < 6; i++) {
    const response = await app.app.inject({
      method: 'POST',
      url: '/api/page',
      headers: app.site.headers,
      payload: { page_usertitle: `Page ${i}`, page_crop_aspect: i % 2 === 0 },
    });
    ids.push(json(response).data[0].id);
  }
  const before = await storedAndBuilt(app.db.kysely, 'page');
  await app.db.kysely.updateTable('pages').set({ record_json: '', etag: '' }).where('page', 'in', ids.slice(1, 5)).execute();
  await app.db.kysely.updateTable('pages').set({ record_json: '{}' }).where('page', '=', ids[6]!).execute();

  await rebuildStoredRecords(untyped(app.db.kysely), 2);

  assert.deepEqual(await storedAndBuilt(app.db.kysely, 'page'), before, 'seven pages in batches of two, each rebuilt as it was');
  assert.equal(await assertEveryRecordStored(app.db.kysely), 7);
  await rebuildStoredRecords(untyped(app.db.kysely), 2);
  assert.deepEqual(await storedAndBuilt(app.db.kysely, 'page'), before, 'running it again changes nothing');
});
