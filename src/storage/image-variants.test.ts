import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import sharp from 'sharp';
import { type BlogTestApp, buildBlogApp, DRIVERS, form, image, postForm, storageOf } from '../../test/blog-fixtures.js';
import { addTestSite, createTestDatabase, json, tempDir } from '../../test/helpers.js';
import { buildApp } from '../app.js';
import { type Config, testConfig } from '../config.js';
import { LocalImageStorage } from './local-image-storage.js';

async function uploaded(app: BlogTestApp, file: Buffer, filename: string): Promise<string> {
  const response = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: filename })],
    ['primaryImage', { file, filename }],
  ]);
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0].info_img;
}

const settings = (driver: Config['images']['storage'], more: Partial<Config['imageProcessing']> = {}): Partial<Config> => ({
  images: { storage: driver, cleanupGraceMs: 3600_000 },
  imageProcessing: { ...testConfig().imageProcessing, ...more },
});

for (const driver of DRIVERS) {
  test(`${driver}: GET /images/<name>?width= makes a smaller variant once, keeps it, with a strong ETag and 304`, async (t) => {
    const app = await buildBlogApp(t, settings(driver));
    const path = await uploaded(app, await image('jpeg', 400, 200), 'wide.jpg');
    const first = await app.app.inject({ url: `${path}?width=100` });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.headers['content-type'], 'image/jpeg');
    assert.equal(first.headers['cache-control'], 'public, max-age=31536000, immutable');
    const etag = String(first.headers.etag);
    assert.match(etag, /^"[0-9a-f]{32}\.jpg~w100-h0-inside-q85\.jpg"$/);
    const meta = await sharp(first.rawPayload).metadata();
    assert.deepEqual([meta.width, meta.height], [100, 50]);
    const name = path.slice('/images/'.length);
    assert.ok((await storageOf(app).readVariant(name, 'w100-h0-inside-q85.jpg'))?.equals(first.rawPayload), 'kept in the storage');

    const again = await app.app.inject({ url: `${path}?width=100` });
    assert.ok(again.rawPayload.equals(first.rawPayload));
    assert.equal(again.headers.etag, etag);
    const cached = await app.app.inject({ url: `${path}?width=100`, headers: { 'if-none-match': etag } });
    assert.equal(cached.statusCode, 304);

    const large = await app.app.inject({ url: `${path}?width=4000&height=4000&fit=cover&format=png` });
    assert.equal(large.statusCode, 200, large.body);
    const largeMeta = await sharp(large.rawPayload).metadata();
    assert.deepEqual([largeMeta.format, largeMeta.width, largeMeta.height], ['png', 400, 200], 'never larger than the original');
  });

  test(`${driver}: format=auto follows Accept (AVIF, then WebP, then the original's) and says Vary: Accept`, async (t) => {
    const app = await buildBlogApp(t, settings(driver));
    const path = await uploaded(app, await image('png', 60, 40), 'a.png');
    const cases: [string | undefined, string][] = [
      ['image/avif,image/webp,*/*', 'image/avif'],
      ['image/webp,*/*;q=0.8', 'image/webp'],
      ['image/avif;q=0, image/webp', 'image/webp'],
      ['*/*', 'image/png'],
      [undefined, 'image/png'],
    ];
    for (const [accept, type] of cases) {
      const response = await app.app.inject({ url: `${path}?format=auto&width=30`, headers: accept ? { accept } : {} });
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.headers['content-type'], type, String(accept));
      assert.equal(response.headers.vary, 'accept');
      assert.equal((await sharp(response.rawPayload).metadata()).width, 30);
    }
    const fixed = await app.app.inject({ url: `${path}?format=webp`, headers: { accept: 'image/avif' } });
    assert.equal(fixed.headers['content-type'], 'image/webp');
    assert.equal(fixed.headers.vary, undefined, 'a fixed format does not vary');
  });
}

test('unknown parameters and values out of range are 400 problems; unknown images 404', async (t) => {
  const app = await buildBlogApp(t);
  const path = await uploaded(app, await image('jpeg', 50, 50), 'x.jpg');
  for (const query of [
    'w=10',
    'width=0',
    'width=4001',
    'height=abc',
    'fit=fill',
    'format=gif',
    'format=tiff',
    'quality=0',
    'quality=101',
    'width=10&width=20',
  ]) {
    const response = await app.app.inject({ url: `${path}?${query}` });
    assert.equal(response.statusCode, 400, `${query}: ${response.body}`);
    assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
  }
  assert.equal((await app.app.inject({ url: `/images/${'0'.repeat(32)}.jpg?width=10` })).statusCode, 404);
  assert.equal((await app.app.inject({ url: '/images/../x.jpg?width=10' })).statusCode, 404);
});

test('a bounded number of variants is kept per image, the least recently used dropped', async (t) => {
  // A variant's last use is the storage's clock (Date.now, read as it is built): the clock stands
  // still until ticked, so each variant is used a second after the one before.
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const app = await buildBlogApp(t, settings('local', { variantsPerImage: 2 }));
  const path = await uploaded(app, await image('jpeg', 200, 200), 'sq.jpg');
  const name = path.slice('/images/'.length);
  for (const width of [10, 20, 30]) {
    t.mock.timers.tick(1000);
    assert.equal((await app.app.inject({ url: `${path}?width=${width}` })).statusCode, 200);
  }
  const storage = storageOf(app);
  assert.equal(await storage.readVariant(name, 'w10-h0-inside-q85.jpg'), undefined);
  assert.ok(await storage.readVariant(name, 'w30-h0-inside-q85.jpg'));
});

test('making new variants is rate-limited per client address (429 problem); stored ones are still served', async (t) => {
  const app = await buildBlogApp(t, settings('database', { variantsPerMinute: 2 }));
  const path = await uploaded(app, await image('jpeg', 200, 200), 'sq.jpg');
  for (const width of [10, 20]) assert.equal((await app.app.inject({ url: `${path}?width=${width}` })).statusCode, 200);
  const refused = await app.app.inject({ url: `${path}?width=30` });
  assert.equal(refused.statusCode, 429, refused.body);
  assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
  assert.ok(Number(refused.headers['retry-after']) > 0);
  assert.equal((await app.app.inject({ url: `${path}?width=10` })).statusCode, 200, 'a stored variant costs no quota');
  const other = await app.app.inject({ url: `${path}?width=30`, remoteAddress: '192.0.2.7' });
  assert.equal(other.statusCode, 200, 'another address has its own quota');
});

test('an image removed while its variant is being made is a 404, not a 500', async (t) => {
  const dir = await tempDir(t);
  // The image is found, then gone by the time its bytes are read (its blog deleted meanwhile).
  let vanished = false;
  const images = new (class extends LocalImageStorage {
    override async open(name: string) {
      return vanished ? undefined : super.open(name);
    }
  })(path.join(dir, 'images'));
  const db = await createTestDatabase(t);
  const app = await buildApp({ config: testConfig({ dataDir: dir, ...settings('local') }), db, images });
  t.after(() => app.close());
  const site = await addTestSite(db);
  const page = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'P' } });
  const upload = await form([
    ['data', JSON.stringify({ page: json(page).data[0].page, info_title: 'Gone' })],
    ['primaryImage', { file: await image('jpeg', 200, 100), filename: 'gone.jpg' }],
  ]);
  const blog = await app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: { ...site.headers, ...upload.headers },
    payload: upload.payload,
  });
  assert.equal(blog.statusCode, 201, blog.body);
  vanished = true;
  const response = await app.inject({ url: `${json(blog).data[0].info_img}?width=50` });
  assert.equal(response.statusCode, 404, response.body);
  assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
});

test('a variant’s cost is capped: within 4096×4096 pixels, AVIF within 2048×2048, the aspect kept', async (t) => {
  const app = await buildBlogApp(t);
  const path = await uploaded(app, await image('jpeg', 5000, 4000), 'large.jpg');
  for (const [query, format, maxPixels] of [
    ['format=webp', 'webp', 4096 * 4096],
    ['format=avif', 'heif', 2048 * 2048],
    ['format=avif&width=4000&height=4000&fit=cover', 'heif', 2048 * 2048],
  ] as const) {
    const response = await app.app.inject({ url: `${path}?${query}` });
    assert.equal(response.statusCode, 200, `${query}: ${response.body}`);
    const meta = await sharp(response.rawPayload).metadata();
    assert.equal(meta.format, format);
    const pixels = (meta.width ?? 0) * (meta.height ?? 0);
    assert.ok(pixels <= maxPixels && pixels > maxPixels * 0.95, `${query}: ${meta.width}×${meta.height}`);
    const aspect = query.includes('cover') ? 1 : 5 / 4;
    assert.ok(Math.abs((meta.width ?? 0) / (meta.height ?? 1) - aspect) < 0.01, `${query}: the aspect is kept`);
  }
});
