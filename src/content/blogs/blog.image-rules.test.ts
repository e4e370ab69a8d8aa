import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { type BlogTestApp, buildBlogApp, DRIVERS, forgetHistory, image, postForm, storedImages } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';

/** A 3000×1500 camera JPEG: EXIF orientation 6 (shown 1500×3000), a camera model, GPS, and a Display P3 profile. */
async function cameraJpeg(width = 3000, height = 1500): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 200, g: 60, b: 10 } } })
    .jpeg()
    .withExif({ IFD0: { Model: 'Test Camera X' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '60/1 10/1 0/1' } })
    .withMetadata({ orientation: 6 })
    .withIccProfile('p3')
    .toBuffer();
}

async function pageWith(app: BlogTestApp, rules: Record<string, unknown>): Promise<number> {
  const response = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: app.site.headers,
    payload: { page_usertitle: 'Gallery', ...rules },
  });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0].page;
}

async function served(app: BlogTestApp, path: string) {
  const response = await app.app.inject({ url: path });
  assert.equal(response.statusCode, 200, `${path}: ${response.body}`);
  return { bytes: response.rawPayload, meta: await sharp(response.rawPayload).metadata() };
}

for (const driver of DRIVERS) {
  test(`${driver}: uploads are turned upright, stripped of EXIF and profiles, and fitted within the page's limits`, async (t) => {
    const app = await buildBlogApp(t, { images: { storage: driver, cleanupGraceMs: 3600_000 } });
    const page = await pageWith(app, { page_crop_width: 1200, page_crop_height: 800 });
    const response = await postForm(app, [
      ['data', JSON.stringify({ page, info_title: 'Photo' })],
      ['primaryImage', { file: await cameraJpeg(), filename: 'photo.jpg' }],
      ['additionalImages', { file: await cameraJpeg(), filename: 'second.jpg' }],
    ]);
    assert.equal(response.statusCode, 201, response.body);
    const blog = json(response).data[0];
    // Upright it is 1500×3000; within 1200×800 that is 400×800.
    const primary = await served(app, blog.info_img);
    assert.deepEqual(blog.info_img_json, { width: 400, height: 800, bytes: primary.bytes.length, type: 'image/jpeg' });
    for (const { meta } of [primary, await served(app, blog.info_more_images[0])]) {
      assert.equal(meta.width, 400);
      assert.equal(meta.height, 800);
      assert.equal(meta.orientation, undefined, 'the orientation is in the pixels, not in a tag');
      assert.equal(meta.exif, undefined, 'no EXIF: no GPS, no camera model');
      assert.equal(meta.xmp, undefined);
      assert.equal(meta.icc, undefined, 'converted to sRGB, the profile dropped');
      assert.equal(meta.space, 'srgb');
    }
    assert.equal((await storedImages(app)).staged, 0, 'the originals are not kept staged');
  });

  test(`${driver}: page_crop_aspect crops to the limits' aspect, and a thumbnail is made as page_thumb_dimensions says`, async (t) => {
    const app = await buildBlogApp(t, { images: { storage: driver, cleanupGraceMs: 3600_000 } });
    const page = await pageWith(app, {
      page_crop_width: 1200,
      page_crop_height: 800,
      page_crop_aspect: true,
      page_thumb_dimensions: '200x200',
      page_crop_aspect_thumbs: true,
    });
    const photo = await image('jpeg', 3000, 1500);
    const response = await postForm(app, [
      ['data', JSON.stringify({ page, info_title: 'Cropped' })],
      ['uploadPrimaryImage', { file: photo, filename: 'wide.jpg' }],
      ['uploadAdditionalImage', { file: await image('png', 900, 300), filename: 'strip.png' }],
    ]);
    assert.equal(response.statusCode, 201, response.body);
    const blog = json(response).data[0];
    const thumbSrc = blog.info_img.replace('.jpg', '-thumb.jpg');
    assert.equal(blog.info_img_json.width, 1200);
    assert.equal(blog.info_img_json.height, 800);
    assert.deepEqual(blog.info_img_json.thumbnail, { src: thumbSrc, width: 200, height: 200 });
    assert.equal((await served(app, blog.info_img)).meta.width, 1200);
    const thumb = await served(app, thumbSrc);
    assert.deepEqual([thumb.meta.width, thumb.meta.height], [200, 200]);
    // An additional image's thumbnail is at its path with -thumb before the extension.
    const extra = await served(app, blog.info_more_images[0]);
    assert.deepEqual([extra.meta.width, extra.meta.height], [450, 300], '900×300 cropped to 3:2, never enlarged');
    const extraThumb = await served(app, blog.info_more_images[0].replace('.png', '-thumb.png'));
    assert.deepEqual([extraThumb.meta.width, extraThumb.meta.height], [200, 200]);

    // Deleting the blog removes the thumbnails with their images, once its history is gone.
    const deleted = await app.app.inject({ method: 'DELETE', url: `/api/blog/${blog.info_id}`, headers: app.site.headers });
    assert.equal(deleted.statusCode, 204);
    await forgetHistory(app);
    assert.deepEqual((await storedImages(app)).committed, []);
  });
}

test('without page_crop_aspect_thumbs the thumbnail fits within the size; 0 or empty limits nothing', async (t) => {
  const app = await buildBlogApp(t);
  const page = await pageWith(app, { page_crop_width: 0, page_crop_height: 500, page_thumb_dimensions: '200x200' });
  const response = await postForm(app, [
    ['data', JSON.stringify({ page, info_title: 'Fitted' })],
    ['primaryImage', { file: await image('webp', 2000, 1000), filename: 'wide.webp' }],
  ]);
  assert.equal(response.statusCode, 201, response.body);
  const { info_img_json } = json(response).data[0];
  assert.deepEqual([info_img_json.width, info_img_json.height], [1000, 500]);
  assert.deepEqual([info_img_json.thumbnail.width, info_img_json.thumbnail.height], [200, 100]);
});

test('an image that already follows the rules and carries no metadata is stored byte for byte', async (t) => {
  const app = await buildBlogApp(t);
  const page = await pageWith(app, { page_crop_width: 100, page_crop_height: 100 });
  const small = await image('png', 80, 60);
  const response = await postForm(app, [
    ['data', JSON.stringify({ page, info_title: 'Small' })],
    ['primaryImage', { file: small, filename: 'small.png' }],
  ]);
  assert.equal(response.statusCode, 201, response.body);
  assert.ok((await served(app, json(response).data[0].info_img)).bytes.equals(small));
});

test('the same upload under the same rules makes the same bytes (repeatable migrations)', async (t) => {
  const app = await buildBlogApp(t);
  const page = await pageWith(app, { page_crop_width: 500, page_crop_height: 500, page_thumb_dimensions: '50x50' });
  const photo = await cameraJpeg(1200, 900);
  const bytes: Buffer[] = [];
  for (const title of ['One', 'Two']) {
    const response = await postForm(app, [
      ['data', JSON.stringify({ page, info_title: title })],
      ['primaryImage', { file: photo, filename: 'p.jpg' }],
    ]);
    assert.equal(response.statusCode, 201, response.body);
    bytes.push((await served(app, json(response).data[0].info_img)).bytes);
  }
  assert.ok(bytes[0]?.equals(bytes[1] as Buffer));
});

/** A PNG whose header claims `width`×`height`: a valid IHDR (with its CRC) over one tiny image's data. */
async function forgedPng(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await image('png', 4, 4));
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
  return png;
}

for (const driver of DRIVERS) {
  test(`${driver}: past UPLOAD_MAX_PIXELS by its header, an upload is a 413 problem and nothing is stored`, async (t) => {
    const app = await buildBlogApp(t, { images: { storage: driver, cleanupGraceMs: 3600_000 } });
    const response = await postForm(app, [
      ['data', JSON.stringify({ page: app.pageId, info_title: 'Bomb' })],
      ['primaryImage', { file: await forgedPng(60000, 60000), filename: 'bomb.png' }],
    ]);
    assert.equal(response.statusCode, 413, response.body);
    assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
    assert.match(json(response).detail, /60000×60000 pixels.*UPLOAD_MAX_PIXELS/);
    assert.deepEqual(await storedImages(app), { committed: [], staged: 0 });
    assert.equal(json(await app.app.inject({ url: '/api/blog', headers: app.site.headers })).meta.total, 0);
  });
}

test('UPLOAD_MAX_PIXELS is a setting: a lower one refuses smaller images', async (t) => {
  const app = await buildBlogApp(t, { uploads: { maxFileBytes: 10 * 1024 * 1024, maxFiles: 20, maxPixels: 1000 } });
  const response = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Too many pixels' })],
    ['additionalImage', { file: await image('jpeg', 40, 30), filename: 'ok.jpg' }],
    ['additionalImage', { file: await image('jpeg', 50, 30), filename: 'big.jpg' }],
  ]);
  assert.equal(response.statusCode, 413, response.body);
  assert.deepEqual(await storedImages(app), { committed: [], staged: 0 });
});
