import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type BlogTestApp, buildBlogApp } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';
import { foldForSearch } from './filters.js';
import { blogSearchText } from './search-text.js';

async function create(app: BlogTestApp, resource: 'page' | 'blog', payload: Record<string, unknown>): Promise<void> {
  const response = await app.app.inject({ method: 'POST', url: `/api/${resource}`, headers: app.site.headers, payload });
  assert.equal(response.statusCode, 201, response.body);
}

async function found(app: BlogTestApp, resource: 'page' | 'blog', keywords: string): Promise<string[]> {
  const response = await app.app.inject({ url: `/api/${resource}?keywords=${encodeURIComponent(keywords)}`, headers: app.site.headers });
  assert.equal(response.statusCode, 200, response.body);
  return json(response)
    .data.map((r: { page_usertitle?: string; info_title?: string }) => r.page_usertitle ?? r.info_title)
    .sort();
}

// The same on SQLite and PostgreSQL: this file runs on both.
test('keywords ignore accents, in the text and in the query', async (t) => {
  const app = await buildBlogApp(t);
  for (const resource of ['page', 'blog'] as const) {
    const title = resource === 'page' ? 'page_usertitle' : 'info_title';
    const html = resource === 'page' ? 'page_html_content' : 'info_fulltext';
    const extra = resource === 'blog' ? { page: app.pageId } : {};
    await create(app, resource, { ...extra, [title]: 'Café', [html]: '<p>A na&iuml;ve cr&egrave;me</p>' });
    await create(app, resource, { ...extra, [title]: 'Naive art', [html]: '<p>Cafe au lait</p>' });
    await create(app, resource, { ...extra, [title]: 'Καλημέρα', [html]: '<p>Ёлка</p>' });
    await create(app, resource, { ...extra, [title]: 'Caffè', [html]: '<p>Crema</p>' });
    await create(app, resource, { ...extra, [title]: 'Łódź', [html]: '<p>Straße</p>' });

    const cases: Array<[string, string[]]> = [
      ['cafe', ['Café', 'Naive art']],
      ['café', ['Café', 'Naive art']],
      ['CAFÉ', ['Café', 'Naive art']],
      ['naïve', ['Café', 'Naive art']],
      ['naive', ['Café', 'Naive art']],
      ['nai\u0308ve', ['Café', 'Naive art']],
      ['creme', ['Café']],
      ['cafe naive creme', ['Café']],
      ['caffe', ['Caffè']],
      ['καλημερα', ['Καλημέρα']],
      ['елка', ['Καλημέρα']],
      ['łodz', ['Łódź']],
      ['ŁÓDŹ strasse', []],
      ['lodz', []],
      ['STRAßE', ['Łódź']],
      ['caf', []],
      ['cafes', []],
      ['crème brûlée', []],
    ];
    for (const [keywords, expected] of cases) {
      assert.deepEqual(await found(app, resource, keywords), expected, `${resource}: ${keywords}`);
    }
  }
});

test('foldForSearch removes accents and keeps letters that are not accented ones', () => {
  assert.equal(foldForSearch('Crème Brûlée, naïve, Ёлка, Καλημέρα'), 'Creme Brulee, naive, Елка, Καλημερα');
  assert.equal(foldForSearch('nai\u0308ve'), 'naive', 'decomposed input too');
  assert.equal(foldForSearch('Straße Øl Łódź'), 'Straße Øl Łodz', 'ß, Ø and Ł are letters of their own, not accented ones');
  assert.equal(foldForSearch('한국어 日本語'), '한국어 日本語', 'Hangul decomposes and is composed again');
  assert.equal(
    blogSearchText({ info_title: 'Café', info_metatitle: '', info_summary: '', info_tags: 'crème', info_fulltext: '<p>na&iuml;ve</p>' }),
    'Cafe\ncreme\nnaive',
    'the stored search text is folded',
  );
});
