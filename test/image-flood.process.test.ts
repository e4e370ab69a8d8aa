import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import sharp from 'sharp';
import type { DemoCredentials } from '../src/demo/credentials.js';
import { image } from './blog-fixtures.js';
import { basic, listening, start } from './server-process.js';

/** A large photo-like JPEG: noise compresses badly, so it costs what a real photo of its size does. */
function largePhoto(): Promise<Buffer> {
  return sharp({
    create: { width: 4000, height: 3000, channels: 3, background: 'black', noise: { type: 'gaussian', mean: 128, sigma: 40 } },
  })
    .jpeg({ quality: 80 })
    .toBuffer();
}

test('a flood of anonymous AVIF variants: excess refused 503 at once, uploads answered meanwhile, nothing logged as an error', async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-image-flood-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const server = await start(t, { DATA_DIR: dataDir });
  await listening(server);
  const credentials = JSON.parse(await readFile(path.join(dataDir, 'demo-credentials.json'), 'utf8')) as DemoCredentials;
  const auth = { authorization: basic(credentials) };
  const page = await fetch(`${server.base}/api/page`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ page_usertitle: 'Ruled', page_crop_width: 300, page_crop_height: 200 }),
  });
  assert.equal(page.status, 201);
  const pageId = ((await page.json()) as { data: [{ page: number }] }).data[0].page;
  const post = async (file: Buffer, filename: string) => {
    const form = new FormData();
    form.append('data', JSON.stringify({ page: pageId, info_title: filename }));
    form.append('primaryImage', new Blob([file], { type: 'image/jpeg' }), filename);
    const response = await fetch(`${server.base}/api/blog`, { method: 'POST', headers: auth, body: form });
    return { status: response.status, body: (await response.json()) as { data: [{ info_img: string }] } };
  };
  // Stored under no rules, so its variants start from the whole photo.
  const big = await post(await largePhoto(), 'big.jpg');
  assert.equal(big.status, 201);
  const photo = big.body.data[0].info_img;

  // Anonymous, from one address, within the per-minute quota: each asks for a new AVIF variant.
  let firstRefusal!: () => void;
  const refusedOnce = new Promise<void>((resolve) => (firstRefusal = resolve));
  const flood = Array.from({ length: 30 }, (_, i) =>
    fetch(`${server.base}${photo}?width=${3000 - i}&format=avif`).then(async (response) => {
      if (response.status === 503) firstRefusal();
      await response.arrayBuffer();
      return { status: response.status, type: response.headers.get('content-type'), retry: response.headers.get('retry-after') };
    }),
  );
  await refusedOnce;
  // The variant queue is full: uploads under the page's rules are processed all the same.
  const during = await Promise.all([0, 1, 2].map(async (n) => post(await image('jpeg', 640, 480, n), `during-${n}.jpg`)));
  for (const upload of during) assert.equal(upload.status, 201);

  const answers = await Promise.all(flood);
  const refused = answers.filter((a) => a.status === 503);
  assert.ok(refused.length > 0);
  for (const answer of answers) assert.ok(answer.status === 200 || answer.status === 503, JSON.stringify(answer));
  for (const answer of refused) {
    assert.match(String(answer.type), /^application\/problem\+json/);
    assert.ok(Number(answer.retry) > 0);
  }
  assert.doesNotMatch(server.output(), /"level":50/, 'nothing logged at error level');
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exit, { code: 0, signal: null });
});
