import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { buildBlogApp, filesIn, forgetHistory, image, noisyJpeg, postForm } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';

const PDF = Buffer.from('%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n');
const SVG = Buffer.from(
  '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>',
);

async function blogCount(app: Awaited<ReturnType<typeof buildBlogApp>>): Promise<number> {
  return json(await app.app.inject({ url: '/api/blog', headers: app.site.headers })).meta.total;
}

test('multipart POST stores the images, sets info_img, info_img_json and info_more_images, and serves the files', async (t) => {
  const app = await buildBlogApp(t);
  const primary = await image('jpeg', 64, 48);
  const extraPng = await image('png', 20, 10);
  const extraGif = await image('gif', 11, 7);
  const response = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'With images', info_more_images: ['/legacy/one.jpg'] })],
    ['uploadPrimaryImage', { file: primary, filename: 'cover.jpg', type: 'image/jpeg' }],
    ['uploadAdditionalImage', { file: extraPng, filename: 'a.png' }],
    ['uploadAdditionalImages', { file: extraGif, filename: 'b.gif' }],
  ]);
  assert.equal(response.statusCode, 201, response.body);
  const blog = json(response).data[0];
  assert.match(blog.info_img, /^\/images\/[0-9a-f]{32}\.jpg$/);
  assert.deepEqual(blog.info_img_json, { width: 64, height: 48, bytes: primary.length, type: 'image/jpeg' });
  assert.equal(blog.info_more_images.length, 3);
  assert.equal(blog.info_more_images[0], '/legacy/one.jpg', 'the paths in data come first, uploads are appended');
  assert.match(blog.info_more_images[1], /^\/images\/[0-9a-f]{32}\.png$/);
  assert.match(blog.info_more_images[2], /^\/images\/[0-9a-f]{32}\.gif$/);
  assert.equal(response.headers.location, `/api/blog/${blog.info_id}`);
  assert.deepEqual(json(await app.app.inject({ url: `/api/blog/${blog.info_id}`, headers: app.site.headers })).data[0], blog);

  assert.deepEqual(
    (await filesIn(app.imagesDir)).sort(),
    [blog.info_img, blog.info_more_images[1], blog.info_more_images[2]].map((p) => p.slice(8)).sort(),
  );
  const served = await app.app.inject({ url: blog.info_img });
  assert.equal(served.statusCode, 200);
  assert.equal(served.headers['content-type'], 'image/jpeg');
  assert.equal(served.headers['cache-control'], 'public, max-age=31536000, immutable');
  assert.equal(served.headers['x-content-type-options'], 'nosniff');
  assert.ok(served.rawPayload.equals(primary), 'the bytes come back unchanged');
  assert.equal((await app.app.inject({ url: blog.info_more_images[2] })).headers['content-type'], 'image/gif');
  assert.equal((await app.app.inject({ method: 'HEAD', url: blog.info_img })).statusCode, 200);
});

test('every accepted file field name works, and all five image types are accepted', async (t) => {
  const app = await buildBlogApp(t);
  const primaryNames = ['uploadPrimaryImage', 'primaryImage'];
  const additionalNames = ['uploadAdditionalImage', 'uploadAdditionalImages', 'additionalImage', 'additionalImages'];
  for (const name of primaryNames) {
    const response = await postForm(app, [
      ['data', JSON.stringify({ page: app.pageId, info_title: name })],
      [name, { file: await image('webp', 30, 20), filename: 'p.webp' }],
    ]);
    assert.equal(response.statusCode, 201, `${name}: ${response.body}`);
    const blog = json(response).data[0];
    assert.match(blog.info_img, /\.webp$/, name);
    assert.deepEqual(blog.info_img_json, { width: 30, height: 20, bytes: blog.info_img_json.bytes, type: 'image/webp' });
    assert.deepEqual(blog.info_more_images, []);
  }
  for (const name of additionalNames) {
    const response = await postForm(app, [
      ['data', JSON.stringify({ page: app.pageId, info_title: name })],
      [name, { file: await image('avif', 8, 8, 1), filename: 'one.avif' }],
      [name, { file: await image('png', 8, 8, 2), filename: 'two.png' }],
    ]);
    assert.equal(response.statusCode, 201, `${name}: ${response.body}`);
    const blog = json(response).data[0];
    assert.equal(blog.info_img, '', name);
    assert.equal(blog.info_more_images.length, 2, `${name} may be repeated`);
    assert.match(blog.info_more_images[0], /\.avif$/);
  }
  const twoPrimaries = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Two covers' })],
    ['uploadPrimaryImage', { file: await image('png'), filename: 'a.png' }],
    ['primaryImage', { file: await image('png'), filename: 'b.png' }],
  ]);
  assert.equal(twoPrimaries.statusCode, 400);
  const unknownField = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Odd field' })],
    ['photo', { file: await image('png'), filename: 'a.png' }],
  ]);
  assert.equal(unknownField.statusCode, 400);
  assert.equal(json(unknownField).errors[0].field, 'photo');
  assert.equal(await blogCount(app), 6);
  assert.equal((await filesIn(app.imagesDir)).length, 2 + 8, 'refused forms left no file');
});

test('files are judged by their bytes: PDF named .jpg, SVG, text, truncated images and impossible sizes are 415', async (t) => {
  const app = await buildBlogApp(t);
  const jpeg = await image('jpeg');
  // A PNG header claiming 2,155,967,524 pixels a side: more than any format allows or an integer column holds (PostgreSQL refused the row: a 500, found by the fuzz suite).
  const huge = Buffer.from(await image('png'));
  huge.writeUInt32BE(2_155_967_524, 16);
  huge.writeUInt32BE(2_155_967_524, 20);
  const cases: Array<[string, Buffer, string, string]> = [
    ['uploadPrimaryImage', PDF, 'photo.jpg', 'image/jpeg'],
    ['uploadAdditionalImage', SVG, 'logo.svg', 'image/svg+xml'],
    ['additionalImages', Buffer.from('just some text, not an image at all'), 'notes.png', 'image/png'],
    ['primaryImage', jpeg.subarray(0, 20), 'cut.jpg', 'image/jpeg'],
    ['uploadAdditionalImages', Buffer.alloc(0), 'empty.jpg', 'image/jpeg'],
    ['uploadPrimaryImage', huge, 'huge.png', 'image/png'],
  ];
  for (const [field, bytes, filename, type] of cases) {
    const response = await postForm(app, [
      ['data', JSON.stringify({ page: app.pageId, info_title: filename })],
      ['uploadAdditionalImage', { file: await image('png'), filename: 'fine.png' }],
      [field, { file: bytes, filename, type }],
    ]);
    assert.equal(response.statusCode, 415, `${filename}: ${response.body}`);
    assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.match(json(response).detail, /JPEG, PNG, GIF, WebP and AVIF/);
  }
  assert.equal(await blogCount(app), 0);
  assert.deepEqual(await filesIn(app.imagesDir), [], 'neither the refused file nor the good one before it is kept');
});

test('a file over the size limit, or too many files, is 413 and leaves nothing', async (t) => {
  const app = await buildBlogApp(t, { uploads: { maxFileBytes: 64 * 1024, maxFiles: 3, maxPixels: 50_000_000 } });
  const big = await noisyJpeg(150 * 1024);
  assert.ok(big.length > 64 * 1024);
  const oversized = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Too big' })],
    ['uploadAdditionalImage', { file: await image('png'), filename: 'small.png' }],
    ['uploadPrimaryImage', { file: big, filename: 'big.jpg' }],
  ]);
  assert.equal(oversized.statusCode, 413, oversized.body);
  assert.match(json(oversized).detail, /big\.jpg.*65536 bytes, the most a file may have \(UPLOAD_MAX_FILE_BYTES\): send a smaller file\.$/);

  const tooMany = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Too many' })],
    ...(await Promise.all(
      [1, 2, 3, 4].map(
        async (n) =>
          ['additionalImage', { file: await image('png', 8, 8, n), filename: `${n}.png` }] as [string, { file: Buffer; filename: string }],
      ),
    )),
  ]);
  assert.equal(tooMany.statusCode, 413, tooMany.body);
  assert.equal(
    json(tooMany).detail,
    'The form has more than 3 files, the most one request may carry (UPLOAD_MAX_FILES): send fewer images.',
  );
  assert.equal(await blogCount(app), 0);
  assert.deepEqual(await filesIn(app.imagesDir), []);

  const atLimit = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Just right' })],
    ...(await Promise.all(
      [1, 2, 3].map(
        async (n) =>
          ['additionalImage', { file: await image('png', 8, 8, n), filename: `${n}.png` }] as [string, { file: Buffer; filename: string }],
      ),
    )),
  ]);
  assert.equal(atLimit.statusCode, 201, atLimit.body);
});

test('a form whose record is refused keeps no file and no row, whichever comes first', async (t) => {
  const app = await buildBlogApp(t);
  const files: Array<[string, { file: Buffer; filename: string }]> = [
    ['uploadPrimaryImage', { file: await image('jpeg'), filename: 'a.jpg' }],
    ['uploadAdditionalImage', { file: await image('png'), filename: 'b.png' }],
  ];
  const other = await app.addSite('B');
  const foreignPage = json(
    await app.app.inject({ method: 'POST', url: '/api/page', headers: other.headers, payload: { page_usertitle: 'B page' } }),
  ).data[0].page;
  const taken = json(
    await app.app.inject({
      method: 'POST',
      url: '/api/blog',
      headers: app.site.headers,
      payload: { page: app.pageId, info_title: 'Taken' },
    }),
  ).data[0];
  const cases: Array<[string, string, number]> = [
    ['bad date (schema)', JSON.stringify({ page: app.pageId, info_date: '2024-02-31' }), 400],
    ['unknown field (schema)', JSON.stringify({ page: app.pageId, colour: 'red' }), 400],
    ['not JSON', '{"page":', 400],
    ['no page (service)', JSON.stringify({ info_title: 'No page' }), 400],
    ["another website's page (database check)", JSON.stringify({ page: foreignPage, info_title: 'Foreign' }), 400],
    [
      'duplicate filename (unique index)',
      JSON.stringify({ page: app.pageId, info_title: 'Again', info_filename: taken.info_filename }),
      409,
    ],
    ['unknown id', JSON.stringify({ id: 987654, info_title: 'Ghost' }), 404],
  ];
  for (const [label, data, status] of cases) {
    for (const order of ['data first', 'data last']) {
      const fields: Array<[string, string | { file: Buffer; filename: string }]> =
        order === 'data first' ? [['data', data], ...files] : [...files, ['data', data]];
      const response = await postForm(app, fields);
      assert.equal(response.statusCode, status, `${label}, ${order}: ${response.body}`);
      assert.deepEqual(await filesIn(app.imagesDir), [], `${label}, ${order}: no file left, staged or public`);
    }
  }
  const missingData = await postForm(app, files);
  assert.equal(missingData.statusCode, 400);
  assert.equal(json(missingData).errors[0].field, 'data');
  assert.equal(await blogCount(app), 1, 'only the blog made by JSON');
  assert.deepEqual(await filesIn(app.imagesDir), []);
});

test('the data field follows the JSON body rules: the same validation messages, and migrateMode inside it', async (t) => {
  const app = await buildBlogApp(t);
  const asJson = await app.app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: app.site.headers,
    payload: { page: app.pageId, info_show: 'maybe', info_order: -1 },
  });
  const asForm = await postForm(app, [['data', JSON.stringify({ page: app.pageId, info_show: 'maybe', info_order: -1 })]]);
  assert.equal(asForm.statusCode, 400);
  assert.deepEqual(json(asForm).errors, json(asJson).errors);
  const noFiles = await postForm(app, [['data', JSON.stringify({ page: app.pageId, info_title: 'Text only', info_show: 0 })]]);
  assert.equal(noFiles.statusCode, 201, noFiles.body);
  assert.equal(json(noFiles).data[0].info_show, 'N');
});

test('replacing and deleting remove the files no record uses any more, and keep shared ones', async (t) => {
  const app = await buildBlogApp(t);
  const first = json(
    await postForm(app, [
      ['data', JSON.stringify({ page: app.pageId, info_title: 'Owner' })],
      ['uploadPrimaryImage', { file: await image('jpeg', 10, 10, 1), filename: 'one.jpg' }],
      ['uploadAdditionalImage', { file: await image('png', 10, 10, 2), filename: 'two.png' }],
      ['uploadAdditionalImage', { file: await image('png', 10, 10, 3), filename: 'three.png' }],
    ]),
  ).data[0];
  const [two, three] = first.info_more_images as [string, string];
  const name = (p: string) => p.slice('/images/'.length);
  // Another blog refers to the first's primary image by path, and a page embeds "three" in its HTML.
  const sharer = json(
    await app.app.inject({
      method: 'POST',
      url: '/api/blog',
      headers: app.site.headers,
      payload: { page: app.pageId, info_title: 'Sharer', info_img: first.info_img },
    }),
  ).data[0];
  assert.deepEqual(sharer.info_img_json, first.info_img_json, 'metadata of a known upload follows its path');
  await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: app.site.headers,
    payload: { page_usertitle: 'Gallery', page_html_content: `<img src="${three}">` },
  });

  // A normal update replaces the primary image and the list.
  const replaced = await postForm(app, [
    ['data', JSON.stringify({ id: first.info_id, info_more_images: [three] })],
    ['uploadPrimaryImage', { file: await image('jpeg', 12, 12, 4), filename: 'new.jpg' }],
  ]);
  assert.equal(replaced.statusCode, 200, replaced.body);
  const after = json(replaced).data[0];
  assert.notEqual(after.info_img, first.info_img);
  assert.deepEqual(after.info_more_images, [three]);
  assert.ok((await filesIn(app.imagesDir)).includes(name(two)), 'the dropped image stays while a revision shows it');
  await forgetHistory(app);
  const onDisk = await filesIn(app.imagesDir);
  assert.ok(!onDisk.includes(name(two)), 'the dropped image nobody uses is removed');
  assert.ok(onDisk.includes(name(first.info_img)), 'the old primary image is kept: another blog uses it');
  assert.ok(onDisk.includes(name(after.info_img)));

  const deleted = await app.app.inject({ method: 'DELETE', url: `/api/blog/${first.info_id}`, headers: app.site.headers });
  assert.equal(deleted.statusCode, 204);
  assert.ok((await filesIn(app.imagesDir)).includes(name(after.info_img)), "the deleted blog's image stays while it can be restored");
  await forgetHistory(app);
  const left = await filesIn(app.imagesDir);
  assert.ok(!left.includes(name(after.info_img)), "the deleted blog's own image is removed");
  assert.ok(left.includes(name(three)), 'an image embedded in a page stays');
  assert.ok(left.includes(name(first.info_img)), 'an image another blog shows stays');
  assert.equal((await app.app.inject({ url: after.info_img })).statusCode, 404);
});

test('/images serves only stored images: no listing, no traversal, no staged files', async (t) => {
  const app = await buildBlogApp(t);
  const blog = json(
    await postForm(app, [
      ['data', JSON.stringify({ page: app.pageId, info_title: 'Served' })],
      ['uploadPrimaryImage', { file: await image('png'), filename: 'a.png' }],
    ]),
  ).data[0];
  const stored = await readFile(path.join(app.imagesDir, blog.info_img.slice(8)));
  assert.equal(createHash('sha256').update(stored).digest('hex').length, 64);
  for (const url of [
    '/images/',
    '/images',
    '/images/..%2f..%2fpackage.json',
    '/images/../package.json',
    '/images/%2e%2e/%2e%2e/package.json',
    '/images/.staging',
    `/images/${blog.info_img.slice(8).replace('.png', '.jpg')}`,
    `/images/${blog.info_img.slice(8).toUpperCase()}`,
    '/images/0123456789abcdef0123456789abcdef.png',
  ]) {
    const response = await app.app.inject({ url });
    assert.equal(response.statusCode, 404, url);
  }
});

test('multipart needs credentials like JSON; the page endpoint reads its data field as a page', async (t) => {
  const app = await buildBlogApp(t);
  const body = [['data', JSON.stringify({ page: app.pageId, info_title: 'No key' })]] as Array<[string, string]>;
  const anonymous = await postForm(app, body, '', { authorization: '' });
  assert.equal(anonymous.statusCode, 401);
  const { form } = await import('../../../test/blog-fixtures.js');
  const encoded = await form(body);
  const onPages = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...app.site.headers, ...encoded.headers },
    payload: encoded.payload,
  });
  assert.equal(onPages.statusCode, 400);
  assert.deepEqual(
    json(onPages).errors.map((e: { field: string }) => e.field),
    ['info_title'],
  );
});

// How browsers (FormData with a Blob), Python's requests (files=) and curl -F 'data=@d.json' send
// JSON: as a part with a file name.
test('the data field may come as a file part of application/json or text/plain, with the same limit', async (t) => {
  const app = await buildBlogApp(t);
  const asFile = (value: unknown, type: string) => ({ file: Buffer.from(JSON.stringify(value)), filename: 'd.json', type });
  const cover = await image('png', 12, 8);
  const fromFile = await postForm(app, [
    ['data', asFile({ page: app.pageId, info_title: 'Café from a file' }, 'application/json')],
    ['uploadPrimaryImage', { file: cover, filename: 'cover.png' }],
  ]);
  assert.equal(fromFile.statusCode, 201, fromFile.body);
  assert.equal(json(fromFile).data[0].info_title, 'Café from a file', 'read as UTF-8');
  assert.deepEqual(json(fromFile).data[0].info_img_json, { width: 12, height: 8, bytes: cover.length, type: 'image/png' });
  const plain = await postForm(app, [['data', asFile({ page: app.pageId, info_title: 'Plain' }, 'text/plain;charset=UTF-8')]]);
  assert.equal(plain.statusCode, 201, plain.body);
  assert.equal(json(plain).data[0].info_title, 'Plain');

  const sameErrors = await postForm(app, [['data', asFile({ page: app.pageId, info_show: 'maybe' }, 'application/json')]]);
  const asField = await postForm(app, [['data', JSON.stringify({ page: app.pageId, info_show: 'maybe' })]]);
  assert.equal(sameErrors.statusCode, 400);
  assert.deepEqual(json(sameErrors).errors, json(asField).errors, 'the schema judges it like the field');
  const notJson = await postForm(app, [['data', { file: Buffer.from('{"page":'), filename: 'd.json', type: 'application/json' }]]);
  assert.equal(notJson.statusCode, 400, notJson.body);
  assert.equal(json(notJson).errors[0].field, 'data');

  for (const type of ['application/octet-stream', 'image/png', 'text/html']) {
    const refused = await postForm(app, [['data', asFile({ page: app.pageId, info_title: 'Wrong type' }, type)]]);
    assert.equal(refused.statusCode, 400, `${type}: ${refused.body}`);
    assert.equal(json(refused).errors[0].field, 'data', type);
    assert.match(json(refused).errors[0].message, /application\/json or text\/plain/, type);
  }
  const twice = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'One' })],
    ['data', asFile({ page: app.pageId, info_title: 'Two' }, 'application/json')],
  ]);
  assert.equal(twice.statusCode, 400, twice.body);
  assert.equal(await blogCount(app), 2);
  assert.equal((await filesIn(app.imagesDir)).length, 1);
});

test('a data file part is limited like the field, not by the image limits, and is not counted as an image', async (t) => {
  const app = await buildBlogApp(t, { uploads: { maxFileBytes: 1024, maxFiles: 1, maxPixels: 50_000_000 } });
  const long = { page: app.pageId, info_title: 'Long', info_fulltext: `<p>${'x'.repeat(4000)}</p>` };
  const asFile = (value: unknown) => ({ file: Buffer.from(JSON.stringify(value)), filename: 'd.json', type: 'application/json' });
  const small = await image('png', 4, 4);
  assert.ok(small.length <= 1024);
  const accepted = await postForm(app, [
    ['data', asFile(long)],
    ['uploadPrimaryImage', { file: small, filename: 'a.png' }],
  ]);
  assert.equal(accepted.statusCode, 201, accepted.body);
  const tooManyImages = await postForm(app, [
    ['data', asFile({ page: app.pageId, info_title: 'Two images' })],
    ['uploadPrimaryImage', { file: small, filename: 'a.png' }],
    ['uploadAdditionalImage', { file: await image('png', 4, 4, 9), filename: 'b.png' }],
  ]);
  assert.equal(tooManyImages.statusCode, 413, tooManyImages.body);
  const tooManyWithField = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Two images' })],
    ['uploadPrimaryImage', { file: small, filename: 'a.png' }],
    ['uploadAdditionalImage', { file: await image('png', 4, 4, 9), filename: 'b.png' }],
  ]);
  assert.equal(tooManyWithField.statusCode, 413, tooManyWithField.body);
  const bigImage = await postForm(app, [
    ['data', asFile({ page: app.pageId, info_title: 'Big image' })],
    ['uploadPrimaryImage', { file: await noisyJpeg(8 * 1024), filename: 'big.jpg' }],
  ]);
  assert.equal(bigImage.statusCode, 413, bigImage.body);
  assert.match(json(bigImage).detail, /big\.jpg.*1024 bytes/);

  const over = { page: app.pageId, info_fulltext: 'x'.repeat(5 * 1024 * 1024) };
  for (const data of [JSON.stringify(over), asFile(over)]) {
    const response = await postForm(app, [['data', data]]);
    assert.equal(response.statusCode, 413, response.body);
    assert.match(json(response).detail, /data field is larger than 5242880 bytes, .*: shorten the record's texts/);
  }
  assert.equal(await blogCount(app), 1);
  assert.equal((await filesIn(app.imagesDir)).length, 1, 'refused forms left no file');
});
