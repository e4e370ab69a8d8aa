import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { buildBlogApp, image, postForm } from '../../../test/blog-fixtures.js';
import { json, type TestApp } from '../../../test/helpers.js';
import type { DbHandle } from '../schema.js';
import { fillOwners } from './0020_image_owners.js';

/** Migrations see the database without the service's table types, as the migrator hands it to them. */
const untyped = (db: DbHandle) => db as unknown as Kysely<unknown>;

test('0020 records the website of each image stored before it, from its blog_images rows, as an upload would', async (t) => {
  const app = await buildBlogApp(t);
  const thumbnails = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: app.site.headers,
    payload: { id: app.pageId, page_thumb_dimensions: '10x10' },
  });
  assert.equal(thumbnails.statusCode, 200, thumbnails.body);
  const b = await app.addSite('B');
  const bPage = json(await app.app.inject({ method: 'POST', url: '/api/page', headers: b.headers, payload: { page_usertitle: 'B' } }))
    .data[0].page as number;
  const upload = async (site: Pick<TestApp, 'site'>, page: number, shade: number) => {
    const saved = await postForm({ ...app, ...site }, [
      ['data', JSON.stringify({ page, info_title: `Upload ${shade}` })],
      ['uploadPrimaryImage', { file: await image('jpeg', 40, 30, shade), filename: 'a.jpg' }],
      ['uploadAdditionalImage', { file: await image('png', 20, 10, shade), filename: 'b.png' }],
    ]);
    assert.equal(saved.statusCode, 201, saved.body);
    return json(saved).data[0] as { info_id: number; info_img: string; info_more_images: string[] };
  };
  const ofA = await upload(app, app.pageId, 1);
  const ofB = await upload({ site: b }, bPage, 2);
  const db = app.db.kysely;
  const owners = () => db.selectFrom('image_owners').selectAll().orderBy('name').execute();
  const written = await owners();
  const nameOf = (path: string) => path.slice('/images/'.length);
  assert.deepEqual(
    written.map((o) => [o.name, o.site_id]).sort(),
    [
      [nameOf(ofA.info_img), app.site.siteId],
      [nameOf(ofA.info_more_images[0]!), app.site.siteId],
      [nameOf(ofB.info_img), b.siteId],
      [nameOf(ofB.info_more_images[0]!), b.siteId],
    ].sort(),
    'one row per image, under its own name: its thumbnail goes with it',
  );
  // What a database from before has: no owners. And, written outside the service, a row of B's
  // naming A's additional image: whose it is cannot be told.
  await db.deleteFrom('image_owners').execute();
  const [row] = await db.selectFrom('blog_images').selectAll().where('path', '=', ofA.info_more_images[0]!).execute();
  await db
    .insertInto('blog_images')
    .values({ ...row!, site_id: b.siteId, info_id: ofB.info_id })
    .execute();

  await fillOwners(untyped(db));

  assert.deepEqual(
    await owners(),
    written.filter((o) => o.name !== nameOf(ofA.info_more_images[0]!)),
    'the same owners as the uploads recorded; none for the image two websites’ rows name, which keeps the any-website rule',
  );
});
