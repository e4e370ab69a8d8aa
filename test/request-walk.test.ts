import assert from 'node:assert/strict';
import { access, readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { testConfig } from '../src/config.js';
import { buildBlogApp, type FormPart, image, postForm } from './blog-fixtures.js';
import { buildTestApp, TEST_DATABASE_URL } from './helpers.js';

/**
 * The webhook worker polls on a timer of its own, beside requests rather than in them: slowed
 * down here so that its poll never lands inside a measured request.
 */
const quietWorker = { webhooks: { ...testConfig().webhooks, pollMs: 60_000 } };

/** The walks are written for the default database, SQLite; on PostgreSQL its own dialect files take the place of sqlite/. */
const onSqlite = { skip: TEST_DATABASE_URL ? 'the walks describe SQLite' : false };

import { filesRunBy } from './request-walk.js';

/** The files docs/architecture.md lists, in order, under the heading that starts with `heading`. */
async function walkInDocs(heading: string): Promise<string[]> {
  const text = await readFile(new URL('../../docs/architecture.md', import.meta.url), 'utf8');
  const start = text.indexOf(`\n### ${heading}`);
  assert.ok(start >= 0, `docs/architecture.md has a section "${heading}"`);
  const end = text.indexOf('\n#', start + 1);
  const section = text.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/\b\d+\. `(src\/[^`]+\.ts)`/g)].map((m) => m[1]!);
}

test(
  'the walk of an API-key GET by id in docs/architecture.md names every file such a request runs code in, when its credential is not cached',
  onSqlite,
  async (t) => {
    const a = await buildTestApp(t, { config: quietWorker });
    const created = await a.app.inject({ method: 'POST', url: '/api/page', headers: a.site.headers, payload: { page_usertitle: 'Walk' } });
    const id = JSON.parse(created.body).data[0].page as number;
    const get = () => a.app.inject({ url: `/api/page/${id}`, headers: a.site.headers });
    for (let i = 0; i < 3; i++) assert.equal((await get()).statusCode, 200);
    const files = await filesRunBy(async () => {
      // A change to the rows that decide access: the next request finds nothing cached and reads its credential.
      a.db.changes.changed();
      assert.equal((await get()).statusCode, 200);
    });
    t.diagnostic(`${files.length} files: ${files.join(' ')}`);
    assert.deepEqual([...(await walkInDocs('GET /api/page/:id'))].sort(), files);
  },
);

test('the walk of a multipart POST /api/blog in docs/architecture.md names every file such a request runs code in', onSqlite, async (t) => {
  const a = await buildBlogApp(t, quietWorker);
  const jpeg = await image('jpeg');
  const post = async (title: string) => {
    const fields: Array<[string, FormPart]> = [
      ['data', JSON.stringify({ page: a.pageId, info_title: title })],
      ['primaryImage', { file: jpeg, filename: 'photo.jpg', type: 'image/jpeg' }],
    ];
    const answer = await postForm(a, fields);
    assert.equal(answer.statusCode, 201, answer.body);
  };
  for (let i = 0; i < 3; i++) await post(`Warm ${i}`);
  const files = await filesRunBy(() => post('Walked'));
  t.diagnostic(`${files.length} files: ${files.join(' ')}`);
  assert.deepEqual([...(await walkInDocs('Multipart POST /api/blog'))].sort(), files);
});

for (const heading of ['A webhook delivery, from the write', 'An undo of one application']) {
  test(`the walk "${heading}…" in docs/architecture.md names files that exist, each in its step`, async () => {
    const files = await walkInDocs(heading);
    assert.ok(files.length >= 5, `the walk names its files as numbered steps (${files.length} found)`);
    for (const file of files) await access(new URL(`../../${file}`, import.meta.url));
  });
}
