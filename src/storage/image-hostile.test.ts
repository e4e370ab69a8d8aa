/**
 * Images a client may send or ask for to hurt the service: files cut short, text hidden in
 * metadata, and floods of variant requests that must not hold up uploads.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { deflateSync } from 'node:zlib';
import { type BlogTestApp, buildBlogApp, DRIVERS, form, image, noisyJpeg, postForm, storageOf } from '../../test/blog-fixtures.js';
import { json } from '../../test/helpers.js';
import { ImageProcessor } from './image-processor.js';

async function pageWithRules(app: BlogTestApp): Promise<number> {
  const page = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: app.site.headers,
    payload: { page_usertitle: 'Ruled', page_crop_width: 100, page_crop_height: 100, page_thumb_dimensions: '20x20' },
  });
  assert.equal(page.statusCode, 201, page.body);
  return json(page).data[0].page;
}

async function upload(app: BlogTestApp, page: number, field: string, file: Buffer, filename: string) {
  return postForm(app, [
    ['data', JSON.stringify({ page, info_title: filename })],
    [field, { file, filename }],
  ]);
}

/** The first half of a file: its header reads well, its pixel data stops short. */
const cut = (file: Buffer) => file.subarray(0, Math.floor(file.length / 2));

for (const driver of DRIVERS) {
  test(`${driver}: a JPEG or PNG cut short is a 422 naming its field on upload under rules, and a 422 on its variants`, async (t) => {
    const app = await buildBlogApp(t, { images: { storage: driver, cleanupGraceMs: 3600_000 } });
    const ruled = await pageWithRules(app);
    for (const [format, field] of [
      ['jpeg', 'primaryImage'],
      ['png', 'uploadAdditionalImage'],
    ] as const) {
      const whole = format === 'jpeg' ? await noisyJpeg(40_000) : await image('png', 300, 200);
      const refused = await upload(app, ruled, field, cut(whole), `cut.${format}`);
      assert.equal(refused.statusCode, 422, refused.body);
      assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
      assert.match(json(refused).detail, new RegExp(`"cut\\.${format}" \\(form field ${field}\\)`));

      // A page without rules stores a clean file as sent, unread: its variants meet the damage.
      const stored = await upload(app, app.pageId, field, cut(whole), `stored.${format}`);
      assert.equal(stored.statusCode, 201, stored.body);
      const blog = json(stored).data[0];
      const path = field === 'primaryImage' ? blog.info_img : blog.info_more_images[0];
      for (const query of ['width=50', 'format=avif', 'format=webp&width=10']) {
        const variant = await app.app.inject({ url: `${path}?${query}` });
        assert.equal(variant.statusCode, 422, `${query}: ${variant.body}`);
        assert.match(String(variant.headers['content-type']), /^application\/problem\+json/);
      }
    }
  });
}

/** A PNG chunk: length, type, data and the CRC of type and data. */
function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  let crc = 0xffffffff;
  for (const byte of body) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? 0xedb88320 ^ (crc >>> 1) : crc >>> 1;
  }
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const sum = Buffer.alloc(4);
  sum.writeUInt32BE((crc ^ 0xffffffff) >>> 0);
  return Buffer.concat([length, body, sum]);
}

const SECRET = 'Author: Jane Private, 12 Home Street';

test('PNG tEXt, zTXt and iTXt chunks, JPEG comments and XMP are removed from stored images, like EXIF', async (t) => {
  const app = await buildBlogApp(t);
  const png = await image('png', 30, 20);
  // After the IHDR chunk (8-byte signature, 25-byte chunk).
  const withChunk = (chunk: Buffer) => Buffer.concat([png.subarray(0, 33), chunk, png.subarray(33)]);
  const jpeg = await image('jpeg', 30, 20);
  const comment = Buffer.from(SECRET);
  const com = Buffer.alloc(4);
  com.writeUInt16BE(0xfffe, 0);
  com.writeUInt16BE(comment.length + 2, 2);
  const xmp = Buffer.from(`<?xpacket begin=""?><x:xmpmeta xmlns:x="adobe:ns:meta/"><dc:creator>${SECRET}</dc:creator></x:xmpmeta>`);
  const cases: [string, Buffer, string][] = [
    ['tEXt', withChunk(pngChunk('tEXt', Buffer.from(`Author\0${SECRET}`))), 'a.png'],
    ['zTXt', withChunk(pngChunk('zTXt', Buffer.concat([Buffer.from('Author\0\0'), deflateSync(SECRET)]))), 'b.png'],
    ['iTXt', withChunk(pngChunk('iTXt', Buffer.from(`Author\0\0\0\0\0${SECRET}`))), 'c.png'],
    ['XMP in iTXt', withChunk(pngChunk('iTXt', Buffer.concat([Buffer.from('XML:com.adobe.xmp\0\0\0\0\0'), xmp]))), 'd.png'],
    ['COM', Buffer.concat([jpeg.subarray(0, 2), com, comment, jpeg.subarray(2)]), 'e.jpg'],
  ];
  for (const [what, file, filename] of cases) {
    const response = await upload(app, app.pageId, 'primaryImage', file, filename);
    assert.equal(response.statusCode, 201, `${what}: ${response.body}`);
    const served = await app.app.inject({ url: json(response).data[0].info_img });
    assert.equal(served.statusCode, 200);
    const text = served.rawPayload.toString('latin1');
    assert.ok(!text.includes('Jane Private') && !text.includes('x:xmpmeta'), `${what}: the text is gone`);
    assert.ok(!/tEXt|zTXt|iTXt/.test(text), `${what}: no text chunk is left`);
    assert.equal(served.rawPayload.indexOf(Buffer.from([0xff, 0xfe])) < 0 || filename.endsWith('.png'), true, `${what}: no COM`);
  }
  // An image with no text at all is still stored byte for byte.
  const plain = await upload(app, app.pageId, 'primaryImage', png, 'plain.png');
  const served = await app.app.inject({ url: json(plain).data[0].info_img });
  assert.ok(served.rawPayload.equals(png));
});

/** Where a regression would wait for ever (an upload behind a held variant), the test fails instead. */
const LOCKED_UP = 60_000;

/** A processor whose variant slot the test holds: one variant that reads nothing until released. */
function heldProcessor(queue: number) {
  const processor = new ImageProcessor({ concurrency: 2, maxPixels: 50_000_000, variants: { concurrency: 1, queue } });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const holding = processor
    .variant(
      async () => {
        await gate;
        return image('png', 4, 4);
      },
      { fit: 'inside', format: 'png' },
    )
    .catch(() => undefined);
  return {
    processor,
    release: async () => {
      release();
      await holding;
    },
  };
}

/** Resolves once `check` holds, looking again after each turn of the event loop (no clock). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setImmediate(resolve));
}

test('variants wait in a bounded queue of their own: past it 503 with Retry-After at once, and uploads are never held up', {
  timeout: LOCKED_UP,
}, async (t) => {
  const held = heldProcessor(1);
  t.after(held.release);
  const app = await buildBlogApp(t, {}, { processor: held.processor });
  const ruled = await pageWithRules(app);
  const stored = await upload(app, app.pageId, 'primaryImage', await image('jpeg', 300, 200), 'big.jpg');
  const path = json(stored).data[0].info_img;

  const queued = app.app.inject({ url: `${path}?width=100&format=avif` });
  await until(() => held.processor.load.variants.waiting === 1);
  const refused = await app.app.inject({ url: `${path}?width=101&format=avif` });
  assert.equal(refused.statusCode, 503, refused.body);
  assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
  assert.ok(Number(refused.headers['retry-after']) > 0);

  // The variant pool is full and its queue too; an upload under rules is processed meanwhile.
  const during = await upload(app, ruled, 'primaryImage', await image('jpeg', 400, 300), 'during.jpg');
  assert.equal(during.statusCode, 201, during.body);
  assert.equal(json(during).data[0].info_img_json.width, 100);

  await held.release();
  assert.equal((await queued).statusCode, 200, 'the queued one is made once the slot is free');
});

test('a variant request whose client has gone leaves the queue and is never made', { timeout: LOCKED_UP }, async (t) => {
  const held = heldProcessor(4);
  t.after(held.release);
  const app = await buildBlogApp(t, {}, { processor: held.processor });
  const stored = await upload(app, app.pageId, 'primaryImage', await image('jpeg', 300, 200), 'big.jpg');
  const path = json(stored).data[0].info_img;
  await app.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.app.server.address() as AddressInfo;

  const gone = httpRequest({ host: '127.0.0.1', port, path: `${path}?width=120&format=avif` });
  gone.on('error', () => {});
  gone.end();
  await until(() => held.processor.load.variants.waiting === 1);
  gone.destroy();
  await until(() => held.processor.load.variants.waiting === 0);
  await held.release();
  // Never made, so never kept: the next request for it makes it now.
  const name = path.slice('/images/'.length);
  assert.equal(await storageOf(app).readVariant(name, 'w120-h0-inside-q60.avif'), undefined);
});

test('an upload whose client has gone before its images were processed is dropped, and nothing is written', {
  timeout: LOCKED_UP,
}, async (t) => {
  const processor = new ImageProcessor({ concurrency: 1, maxPixels: 50_000_000 });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const holding = processor
    .process(
      async () => {
        await gate;
        return image('png', 4, 4);
      },
      'image/png',
      { maxWidth: 0, maxHeight: 0, cropAspect: false, cropThumbnail: false },
      'held',
    )
    .catch(() => undefined);
  t.after(async () => {
    release();
    await holding;
  });
  const app = await buildBlogApp(t, {}, { processor });
  await app.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.app.server.address() as AddressInfo;
  const body = await form([
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Abandoned' })],
    ['primaryImage', { file: await image('jpeg', 300, 200), filename: 'gone.jpg' }],
  ]);
  const gone = httpRequest({
    host: '127.0.0.1',
    port,
    path: '/api/blog',
    method: 'POST',
    headers: { ...app.site.headers, ...body.headers },
  });
  gone.on('error', () => {});
  gone.end(body.payload);
  await until(() => processor.load.uploads.waiting === 1);
  gone.destroy();
  await until(() => processor.load.uploads.waiting === 0);
  release();
  await holding;
  await processor.idle();
  const blogs = await app.app.inject({ url: '/api/blog', headers: app.site.headers });
  assert.equal(json(blogs).meta.total, 0, 'the write was dropped with its upload');
});
