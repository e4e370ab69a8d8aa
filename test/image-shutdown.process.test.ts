import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { DemoCredentials } from '../src/demo/credentials.js';
import { noisyJpeg } from './blog-fixtures.js';
import { basic, listening, start } from './server-process.js';

test('SIGTERM during a batch of large uploads: queued image work is refused with 503, and the process exits 0 on its own', async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-image-shutdown-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const server = await start(t, { DATA_DIR: dataDir, IMAGE_PROCESSING_CONCURRENCY: '1' });
  await listening(server);
  const credentials = JSON.parse(await readFile(path.join(dataDir, 'demo-credentials.json'), 'utf8')) as DemoCredentials;
  const auth = { authorization: basic(credentials) };
  const page = await fetch(`${server.base}/api/page`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ page_usertitle: 'Ruled', page_crop_width: 800, page_crop_height: 600, page_thumb_dimensions: '200x200' }),
  });
  assert.equal(page.status, 201);
  const pageId = ((await page.json()) as { data: [{ page: number }] }).data[0].page;

  const photo = await noisyJpeg(2_000_000);
  const uploads = [0, 1, 2].map((n) => {
    const form = new FormData();
    form.append('data', JSON.stringify({ page: pageId, info_title: `Batch ${n}` }));
    for (let i = 0; i < 10; i++) form.append('additionalImages', new Blob([photo], { type: 'image/jpeg' }), `p${n}-${i}.jpg`);
    return fetch(`${server.base}/api/blog`, { method: 'POST', headers: { ...auth, 'x-request-id': `batch-${n}` }, body: form }).then(
      async (response) => ({
        status: response.status,
        type: response.headers.get('content-type'),
        retry: response.headers.get('retry-after'),
      }),
    );
  });
  // Every upload has reached the server before the signal.
  while (![0, 1, 2].every((n) => server.output().includes(`"reqId":"batch-${n}"`))) {
    await once(server.child.stdout!, 'data');
  }
  server.child.kill('SIGTERM');
  const answers = await Promise.all(uploads);
  assert.deepEqual(await server.exit, { code: 0, signal: null }, server.output().slice(-2000));
  assert.doesNotMatch(server.output(), /shutdown took too long/);
  const refused = answers.filter((a) => a.status === 503);
  assert.ok(refused.length > 0, `image work not started is refused: ${JSON.stringify(answers)}`);
  for (const answer of refused) {
    assert.match(String(answer.type), /^application\/problem\+json/);
    assert.ok(Number(answer.retry) > 0);
  }
  for (const answer of answers) assert.ok([201, 503].includes(answer.status), JSON.stringify(answer));
});
