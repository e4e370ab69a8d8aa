import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { type BlogTestApp, buildBlogApp, filesIn, forgetHistory, image, postForm } from '../../../test/blog-fixtures.js';
import { addTestSite, createTestDatabase, json } from '../../../test/helpers.js';
import { buildApp } from '../../app.js';
import { testConfig } from '../../config.js';
import type { StagedImage } from '../../storage/image-storage.js';
import { LocalImageStorage } from '../../storage/local-image-storage.js';

async function read(app: BlogTestApp, id: number) {
  const response = await app.app.inject({ url: `/api/blog/${id}`, headers: app.site.headers });
  assert.equal(response.statusCode, 200);
  return { body: response.body, etag: response.headers.etag, blog: json(response).data[0] };
}

async function createBlog(app: BlogTestApp, body: Record<string, unknown> = {}) {
  const response = await app.app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: app.site.headers,
    payload: { page: app.pageId, info_title: 'Migrated', ...body },
  });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

test('a multipart migration sent twice leaves the blog exactly as after the first time', async (t) => {
  const app = await buildBlogApp(t);
  const blog = await createBlog(app);
  const cover = await image('jpeg', 50, 40, 1);
  const photos = [await image('png', 10, 10, 2), await image('webp', 10, 10, 3)];
  const migration = async (query: string) =>
    postForm(
      app,
      [
        ['data', JSON.stringify({ id: blog.info_id, info_title: 'Migrated', info_summary: 'From the old site' })],
        ['uploadPrimaryImage', { file: cover, filename: 'cover.jpg' }],
        ['uploadAdditionalImage', { file: photos[0]!, filename: 'p1.png' }],
        ['additionalImages', { file: photos[1]!, filename: 'p2.webp' }],
      ],
      query,
    );
  const first = await migration('?migrateMode=true');
  assert.equal(first.statusCode, 200, first.body);
  const afterFirst = await read(app, blog.info_id);
  assert.match(afterFirst.blog.info_img, /\.jpg$/);
  assert.equal(afterFirst.blog.info_more_images.length, 2);
  const filesAfterFirst = (await filesIn(app.imagesDir)).sort();
  assert.equal(filesAfterFirst.length, 3);

  const second = await migration('?migrateMode=1');
  assert.equal(second.statusCode, 200, second.body);
  const afterSecond = await read(app, blog.info_id);
  assert.equal(afterSecond.body, afterFirst.body, 'the full GET body is identical, info_timestamp included');
  assert.equal(afterSecond.etag, afterFirst.etag);
  assert.deepEqual((await filesIn(app.imagesDir)).sort(), filesAfterFirst, 'no new file, no staged leftovers');
});

test('migrateMode keeps populated images and adds only originals not seen before', async (t) => {
  const app = await buildBlogApp(t);
  const blog = await createBlog(app);
  const a = await image('png', 10, 10, 10);
  const b = await image('png', 10, 10, 11);
  const c = await image('png', 10, 10, 12);
  const start = json(
    await postForm(app, [
      ['data', JSON.stringify({ id: blog.info_id })],
      ['uploadPrimaryImage', { file: await image('jpeg', 30, 30, 1), filename: 'cover.jpg' }],
      ['uploadAdditionalImage', { file: a, filename: 'a.png' }],
    ]),
  ).data[0];

  // migrateMode in the data field this time; a new cover, the same a.png, a new b.png, a.png's bytes under another name.
  const migrated = await postForm(app, [
    ['data', JSON.stringify({ id: blog.info_id, migrateMode: true, info_img: '/elsewhere/x.jpg', info_more_images: ['/legacy/old.jpg'] })],
    ['uploadPrimaryImage', { file: await image('jpeg', 30, 30, 2), filename: 'other-cover.jpg' }],
    ['uploadAdditionalImage', { file: a, filename: 'a.png' }],
    ['uploadAdditionalImages', { file: b, filename: 'b.png' }],
    ['additionalImage', { file: a, filename: 'renamed-a.png' }],
    ['additionalImages', { file: c, filename: 'a.png' }],
  ]);
  assert.equal(migrated.statusCode, 200, migrated.body);
  const after = json(migrated).data[0];
  assert.equal(after.info_img, start.info_img, 'a populated primary image is kept');
  assert.deepEqual(after.info_img_json, start.info_img_json);
  assert.equal(after.info_more_images.length, 5);
  assert.equal(after.info_more_images[0], start.info_more_images[0], 'existing additional images are kept, in place');
  assert.equal(after.info_more_images[1], '/legacy/old.jpg', 'a path not yet listed is added');
  // b.png is new; renamed-a.png and the a.png with other bytes are different originals (name AND hash).
  assert.equal(new Set(after.info_more_images).size, 5);
  assert.equal((await filesIn(app.imagesDir)).length, 1 + 4);

  // Without migrateMode the same fields replace.
  const normal = json(
    await postForm(app, [
      ['data', JSON.stringify({ id: blog.info_id, info_more_images: [] })],
      ['uploadPrimaryImage', { file: await image('jpeg', 30, 30, 2), filename: 'other-cover.jpg' }],
    ]),
  ).data[0];
  assert.notEqual(normal.info_img, start.info_img);
  assert.deepEqual(normal.info_more_images, []);
  assert.equal((await filesIn(app.imagesDir)).length, 6, 'replaced files stay while a revision shows them');
  await forgetHistory(app);
  assert.equal((await filesIn(app.imagesDir)).length, 1, 'replaced files nobody uses are removed');
});

test('the primary image is never listed in info_more_images', async (t) => {
  const app = await buildBlogApp(t);
  const cover = await image('jpeg', 20, 20, 5);
  // The same original sent as primary and as additional image in one request.
  const same = json(
    await postForm(
      app,
      [
        ['data', JSON.stringify({ page: app.pageId, info_title: 'Twice the same' })],
        ['uploadPrimaryImage', { file: cover, filename: 'cover.jpg' }],
        ['uploadAdditionalImage', { file: cover, filename: 'cover.jpg' }],
      ],
      '?migrateMode=1',
    ),
  ).data[0];
  assert.deepEqual(same.info_more_images, []);
  assert.equal((await filesIn(app.imagesDir)).length, 1);

  // Later, the primary original comes again as an additional image, and its path in the JSON list.
  const again = json(
    await postForm(
      app,
      [
        ['data', JSON.stringify({ id: same.info_id, info_more_images: [same.info_img, '/legacy/1.jpg'] })],
        ['uploadAdditionalImages', { file: cover, filename: 'cover.jpg' }],
      ],
      '?migrateMode=true',
    ),
  ).data[0];
  assert.deepEqual(again.info_more_images, ['/legacy/1.jpg']);

  // JSON migrateMode: the primary path sent in the list is left out too, and an empty primary is filled.
  const plain = await createBlog(app, { info_title: 'JSON only', info_more_images: ['/legacy/a.jpg'] });
  const json1 = await app.app.inject({
    method: 'POST',
    url: '/api/blog?migrateMode=true',
    headers: app.site.headers,
    payload: { id: plain.info_id, info_img: '/legacy/a.jpg', info_more_images: ['/legacy/a.jpg', '/legacy/b.jpg'] },
  });
  assert.equal(json1.statusCode, 200, json1.body);
  assert.equal(json(json1).data[0].info_img, '/legacy/a.jpg');
  assert.deepEqual(json(json1).data[0].info_more_images, ['/legacy/b.jpg']);
  const json2 = await app.app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: app.site.headers,
    payload: { id: plain.info_id, migrateMode: 1, info_img: '/legacy/new.jpg', info_more_images: ['/legacy/b.jpg'] },
  });
  assert.equal(json(json2).data[0].info_img, '/legacy/a.jpg', 'populated: kept');
  assert.equal(json2.headers.etag, json1.headers.etag, 'nothing changed');
});

test('a JSON migration sent twice on a new blog and then repeated by id changes nothing', async (t) => {
  const app = await buildBlogApp(t);
  const body = { page: app.pageId, info_title: 'Imported', info_img: '/old/cover.jpg', info_more_images: ['/old/1.jpg', '/old/2.jpg'] };
  const created = await app.app.inject({ method: 'POST', url: '/api/blog?migrateMode=1', headers: app.site.headers, payload: body });
  assert.equal(created.statusCode, 201);
  const id = json(created).data[0].info_id;
  const before = await read(app, id);
  for (let i = 0; i < 2; i++) {
    const repeat = await app.app.inject({
      method: 'POST',
      url: '/api/blog?migrateMode=1',
      headers: app.site.headers,
      payload: { ...body, id },
    });
    assert.equal(repeat.statusCode, 200);
  }
  assert.equal((await read(app, id)).body, before.body);
});

test('if the files cannot be committed, the record is rolled back and no file is left', async (t) => {
  const db = await createTestDatabase(t);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-blogs-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const imagesDir = path.join(dataDir, 'images');
  // Storage whose second commit fails, after the first file already has its public name.
  class FailingStorage extends LocalImageStorage {
    commits = 0;
    override async commit(staged: StagedImage, name: string) {
      if (++this.commits === 2) throw new Error('disk full');
      await super.commit(staged, name);
    }
  }
  const app = await buildApp({ config: testConfig({ dataDir }), db, images: new FailingStorage(imagesDir) });
  t.after(() => app.close());
  const site = await addTestSite(db);
  const pageId = json(await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'Blog' } }))
    .data[0].page;
  const response = await postForm({ app, site } as unknown as BlogTestApp, [
    ['data', JSON.stringify({ page: pageId, info_title: 'Half written' })],
    ['uploadPrimaryImage', { file: await image('jpeg'), filename: 'a.jpg' }],
    ['uploadAdditionalImage', { file: await image('png'), filename: 'b.png' }],
  ]);
  assert.equal(response.statusCode, 500);
  assert.equal(json(await app.inject({ url: '/api/blog', headers: site.headers })).meta.total, 0, 'no row');
  assert.deepEqual(await filesIn(imagesDir), [], 'neither the committed nor the staged file');
});
