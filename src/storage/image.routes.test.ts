import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildBlogApp, DRIVERS, forgetHistory, image, noisyJpeg, postForm, storedImages } from '../../test/blog-fixtures.js';
import { json } from '../../test/helpers.js';

// Upload → serve → delete over HTTP, once per driver (and on PostgreSQL with TEST_DATABASE_URL).
for (const driver of DRIVERS) {
  const config = { images: { storage: driver, cleanupGraceMs: 60 * 60 * 1000 } };

  test(`IMAGE_STORAGE=${driver}: an uploaded image is served with a strong ETag, a year's caching and 304 on If-None-Match`, async (t) => {
    const app = await buildBlogApp(t, config);
    // Larger than a database chunk, so serving streams several.
    const primary = await noisyJpeg(600 * 1024);
    const extra = await image('png', 20, 10);
    const response = await postForm(app, [
      ['data', JSON.stringify({ page: app.pageId, info_title: 'Served' })],
      ['uploadPrimaryImage', { file: primary, filename: 'cover.jpg' }],
      ['uploadAdditionalImage', { file: extra, filename: 'extra.png' }],
    ]);
    assert.equal(response.statusCode, 201, response.body);
    const blog = json(response).data[0];
    const names = [blog.info_img, ...blog.info_more_images].map((p: string) => p.slice('/images/'.length));
    assert.deepEqual(await storedImages(app), { committed: [...names].sort(), staged: 0 });

    const served = await app.app.inject({ url: blog.info_img });
    assert.equal(served.statusCode, 200);
    assert.ok(served.rawPayload.equals(primary), 'the bytes come back unchanged');
    assert.equal(served.headers['content-type'], 'image/jpeg');
    assert.equal(served.headers['content-length'], String(primary.length));
    assert.equal(served.headers.etag, `"${names[0]}"`, 'the generated name is the strong ETag');
    assert.equal(served.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(served.headers['x-content-type-options'], 'nosniff');
    assert.ok(served.headers['last-modified']);
    assert.equal((await app.app.inject({ url: blog.info_more_images[0] })).headers['content-type'], 'image/png');

    const cached = await app.app.inject({ url: blog.info_img, headers: { 'if-none-match': `"other", ${served.headers.etag}` } });
    assert.equal(cached.statusCode, 304);
    assert.equal(cached.body, '');
    assert.equal(cached.headers.etag, served.headers.etag);
    assert.equal(cached.headers['cache-control'], 'public, max-age=31536000, immutable');
    const stale = await app.app.inject({ url: blog.info_img, headers: { 'if-none-match': `"${names[1]}"` } });
    assert.equal(stale.statusCode, 200, 'another image’s tag does not match');
    const head = await app.app.inject({ method: 'HEAD', url: blog.info_img });
    assert.equal(head.statusCode, 200);
    assert.equal(head.headers.etag, served.headers.etag);

    const deleted = await app.app.inject({ method: 'DELETE', url: `/api/blog/${blog.info_id}`, headers: app.site.headers });
    assert.equal(deleted.statusCode, 204);
    await forgetHistory(app);
    assert.deepEqual(await storedImages(app), { committed: [], staged: 0 }, 'the blog’s images went with it, once its history did');
    const removed = await app.app.inject({ url: blog.info_img });
    assert.equal(removed.statusCode, 404);
    assert.match(
      json(removed).detail,
      /^There is no image [0-9a-f]{32}\.\w+: it was never stored, or was removed/,
      'says the image is gone',
    );
    const gone = await app.app.inject({ url: blog.info_img, headers: { 'if-none-match': served.headers.etag as string } });
    assert.equal(gone.statusCode, 404, 'a cached tag does not revive a deleted image');
  });

  test(`IMAGE_STORAGE=${driver}: a refused or broken upload keeps nothing, staged or committed`, async (t) => {
    const app = await buildBlogApp(t, config);
    const refused = await postForm(app, [
      ['uploadPrimaryImage', { file: await image('jpeg'), filename: 'a.jpg' }],
      ['data', JSON.stringify({ page: 999_999, info_title: 'No such page' })],
    ]);
    assert.equal(refused.statusCode, 400, refused.body);
    const notImage = await postForm(app, [
      ['data', JSON.stringify({ page: app.pageId, info_title: 'PDF' })],
      ['uploadAdditionalImage', { file: await image('png'), filename: 'ok.png' }],
      ['uploadAdditionalImage', { file: Buffer.from('%PDF-1.4\n%%EOF\n'), filename: 'x.jpg' }],
    ]);
    assert.equal(notImage.statusCode, 415, notImage.body);
    const tooLarge = await buildBlogApp(t, { ...config, uploads: { maxFileBytes: 100 * 1024, maxFiles: 5, maxPixels: 50_000_000 } });
    const big = await postForm(tooLarge, [
      ['data', JSON.stringify({ page: tooLarge.pageId, info_title: 'Big' })],
      ['uploadPrimaryImage', { file: await noisyJpeg(400 * 1024), filename: 'big.jpg' }],
    ]);
    assert.equal(big.statusCode, 413, big.body);
    for (const each of [app, tooLarge]) assert.deepEqual(await storedImages(each), { committed: [], staged: 0 });
    assert.equal(json(await app.app.inject({ url: '/api/blog', headers: app.site.headers })).meta.total, 0);
  });

  test(`IMAGE_STORAGE=${driver}: only generated names are served`, async (t) => {
    const app = await buildBlogApp(t, config);
    for (const url of ['/images/', '/images/..%2Fcms.sqlite', '/images/.staging', `/images/${'a'.repeat(32)}.jpg`, '/images/x.svg']) {
      const response = await app.app.inject({ url });
      assert.equal(response.statusCode, 404, url);
      assert.match(String(response.headers['content-type']), /problem\+json/, url);
      // A name that is not an image's is no route at all; a generated name that was never stored is said to be absent.
      assert.match(json(response).detail, url.endsWith('a.jpg') ? /^There is no image / : /^No route for /, url);
    }
  });
}

test('IMAGE_STORAGE and IMAGE_CLEANUP_GRACE_SECONDS are read from the environment; a wrong value stops the start', async () => {
  const [{ loadConfig }, { ConfigError }] = await Promise.all([import('../config.js'), import('../config-error.js')]);
  const env = { DATA_DIR: 'test-output/data', COOKIE_SECRETS: 'x'.repeat(32) };
  assert.deepEqual(loadConfig(env).images, { storage: 'local', cleanupGraceMs: 3_600_000 });
  assert.deepEqual(loadConfig({ ...env, IMAGE_STORAGE: 'Database', IMAGE_CLEANUP_GRACE_SECONDS: '0' }).images, {
    storage: 'database',
    cleanupGraceMs: 0,
  });
  assert.throws(() => loadConfig({ ...env, IMAGE_STORAGE: 's3' }), {
    name: 'ConfigError',
    message: 'IMAGE_STORAGE must be local or database',
  });
  assert.throws(() => loadConfig({ ...env, IMAGE_CLEANUP_GRACE_SECONDS: '-5' }), ConfigError);
});
