import assert from 'node:assert/strict';
import { test } from 'node:test';
import sharp from 'sharp';
import { buildBlogApp, DRIVERS, forgetHistory, image, postForm, storageOf, storedImages } from '../../../test/blog-fixtures.js';
import { CHANGE_LOG, json } from '../../../test/helpers.js';
import { ImageProcessor } from '../../storage/image-processor.js';
import { reprocessImages } from './blog.reprocess.js';

for (const driver of DRIVERS) {
  test(`${driver}: reprocess applies a page's new rules, survives an interruption, resumes, and loses no image`, async (t) => {
    const app = await buildBlogApp(t, { images: { storage: driver, cleanupGraceMs: 3600_000 } });
    const blogs: number[] = [];
    for (const title of ['One', 'Two']) {
      const response = await postForm(app, [
        ['data', JSON.stringify({ page: app.pageId, info_title: title })],
        ['primaryImage', { file: await image('jpeg', 400, 200, blogs.length), filename: `${title}.jpg` }],
        ['additionalImage', { file: await image('png', 300, 300, blogs.length), filename: `${title}.png` }],
      ]);
      assert.equal(response.statusCode, 201, response.body);
      blogs.push(json(response).data[0].info_id);
    }
    const changed = await app.app.inject({
      method: 'POST',
      url: '/api/page',
      headers: app.site.headers,
      payload: {
        id: app.pageId,
        page_crop_width: 100,
        page_crop_height: 100,
        page_thumb_dimensions: '20x20',
        page_crop_aspect_thumbs: true,
      },
    });
    assert.equal(changed.statusCode, 200, changed.body);

    const deps = {
      db: app.db.kysely,
      changeLog: CHANGE_LOG,
      images: storageOf(app),
      processor: new ImageProcessor({ concurrency: 1, maxPixels: 50_000_000 }),
    };
    const stop = new AbortController();
    const first = await reprocessImages(deps, { siteId: app.site.siteId, signal: stop.signal, onImage: () => stop.abort() });
    assert.deepEqual(first, { checked: 1, remade: 1, skipped: 0, interrupted: true });
    const everyImageServed = async () => {
      for (const id of blogs) {
        const blog = json(await app.app.inject({ url: `/api/blog/${id}`, headers: app.site.headers })).data[0];
        for (const path of [blog.info_img, ...blog.info_more_images]) {
          assert.equal((await app.app.inject({ url: path })).statusCode, 200, `${path} of blog ${id} is served`);
        }
      }
    };
    await everyImageServed();

    const rest = await reprocessImages(deps, { page: app.pageId });
    assert.deepEqual(rest, { checked: 3, remade: 3, skipped: 0, interrupted: false });
    await everyImageServed();
    for (const id of blogs) {
      const blog = json(await app.app.inject({ url: `/api/blog/${id}`, headers: app.site.headers })).data[0];
      assert.deepEqual([blog.info_img_json.width, blog.info_img_json.height], [100, 50]);
      assert.deepEqual(blog.info_img_json.thumbnail, { src: blog.info_img.replace('.jpg', '-thumb.jpg'), width: 20, height: 20 });
      const extra = await app.app.inject({ url: blog.info_more_images[0] });
      assert.equal((await sharp(extra.rawPayload).metadata()).width, 100);
    }
    // Two blogs × (image + thumbnail) × 2: once no revision shows the old images, they are gone, nothing is left staged.
    await forgetHistory(app);
    assert.deepEqual(
      { count: (await storedImages(app)).committed.length, staged: (await storedImages(app)).staged },
      { count: 8, staged: 0 },
    );
    const shown: string[] = [];
    for (const id of blogs) {
      const blog = json(await app.app.inject({ url: `/api/blog/${id}`, headers: app.site.headers })).data[0];
      shown.push(blog.info_img.slice('/images/'.length), blog.info_more_images[0].slice('/images/'.length));
    }
    assert.deepEqual(
      await app.db.kysely.selectFrom('image_owners').selectAll().orderBy('name').execute(),
      shown.sort().map((name) => ({ name, site_id: app.site.siteId })),
      'a remade image is its website’s, as the one it replaced was, whose row went with it',
    );
    assert.deepEqual(
      await reprocessImages(deps),
      { checked: 0, remade: 0, skipped: 0, interrupted: false },
      'a third run has nothing to do',
    );
  });
}
