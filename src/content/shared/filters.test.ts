import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type BlogTestApp, buildBlogApp } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';
import { htmlToText, likePattern } from './filters.js';

test('htmlToText decodes every named and numeric character reference', () => {
  assert.equal(htmlToText('Caf&eacute; &amp; cr&#232;me'), 'Café & crème');
  assert.equal(htmlToText('&#233;t&#xE9; &#XE9;'), 'été é');
  assert.equal(htmlToText('Wait&hellip; &ldquo;quoted&rdquo; &euro;5 &Omega;'), 'Wait… “quoted” €5 Ω');
  assert.equal(htmlToText('&lt;b&gt; &quot;x&quot; &#39;y&#39; &apos;z&apos;'), `<b> "x" 'y' 'z'`);
  assert.equal(htmlToText('&#128512;'), '😀', 'references beyond the BMP');
});

test('htmlToText decodes what browsers decode, and leaves other ampersands alone', () => {
  assert.equal(htmlToText('fish &amp chips'), 'fish & chips', 'a legacy reference without its semicolon');
  assert.equal(htmlToText('AT&T &unknown; a & b'), 'AT&T &unknown; a & b');
});

test('htmlToText strips tags, scripts and styles, then folds whitespace', () => {
  assert.equal(htmlToText('<h2>Bakers</h2><p>Anna&nbsp;&nbsp;bakes\n\tbread</p>'), 'Bakers Anna bakes bread');
  assert.equal(htmlToText('<script>var a = "&eacute;";</script>x<style>p { color: red }</style>y'), 'x y');
  assert.equal(htmlToText('<p title="&eacute;t&eacute;">text</p>'), 'text', 'attribute values are not text');
  assert.equal(htmlToText('&lt;script&gt;alert(1)&lt;/script&gt;'), '<script>alert(1)</script>', 'escaped markup is text');
  assert.equal(htmlToText('  <br>  '), '');
});

test('likePattern keeps escapes of %, _ and backslash, and makes any other backslash literal', () => {
  assert.equal(likePattern('50\\%'), '50\\%');
  assert.equal(likePattern('a\\_b'), 'a\\_b');
  assert.equal(likePattern('back\\\\slash'), 'back\\\\slash');
  assert.equal(likePattern('back\\slash'), 'back\\\\slash');
  assert.equal(likePattern('C:\\temp\\'), 'C:\\\\temp\\\\');
  assert.equal(likePattern('\\\\%'), '\\\\%', 'an escaped backslash, then a wildcard');
  assert.equal(likePattern('back\\slash', 'contains'), '%back\\\\slash%');
});

async function listed(app: BlogTestApp, resource: 'page' | 'blog', query: string): Promise<string[]> {
  const response = await app.app.inject({ url: `/api/${resource}?${query}`, headers: app.site.headers });
  assert.equal(response.statusCode, 200, `${query}: ${response.body}`);
  return json(response)
    .data.map((r: { page_usertitle?: string; info_title?: string }) => r.page_usertitle ?? r.info_title)
    .sort();
}

test('in a like pattern a backslash escapes only %, _ and itself; before anything else it is a backslash', async (t) => {
  const app = await buildBlogApp(t);
  for (const title of ['back\\slash', 'backslash', 'C:\\temp\\', '50% off', '50x off']) {
    const page = await app.app.inject({ method: 'POST', url: '/api/page', headers: app.site.headers, payload: { page_usertitle: title } });
    assert.equal(page.statusCode, 201, page.body);
    const blog = await app.app.inject({
      method: 'POST',
      url: '/api/blog',
      headers: app.site.headers,
      payload: { page: app.pageId, info_title: title, info_tags: `x, ${title}` },
    });
    assert.equal(blog.statusCode, 201, blog.body);
  }
  const title = (pattern: string) => `title=${encodeURIComponent(pattern)}`;
  const tags = (pattern: string) => `tags=${encodeURIComponent(pattern)}`;
  for (const resource of ['page', 'blog'] as const) {
    assert.deepEqual(await listed(app, resource, title('back\\slash')), ['back\\slash'], `${resource}: \\s is a backslash and s`);
    assert.deepEqual(await listed(app, resource, title('back\\\\slash')), ['back\\slash'], `${resource}: \\\\ is one backslash`);
    assert.deepEqual(await listed(app, resource, title('C:\\temp\\')), ['C:\\temp\\'], `${resource}: a backslash at the end`);
    assert.deepEqual(await listed(app, resource, title('c:\\t%')), ['C:\\temp\\'], `${resource}: a backslash, then a wildcard`);
    assert.deepEqual(await listed(app, resource, title('50\\% off')), ['50% off'], `${resource}: \\% is a percent sign`);
    assert.deepEqual(await listed(app, resource, title('50% off')), ['50% off', '50x off'], `${resource}: % is a wildcard`);
  }
  assert.deepEqual(await listed(app, 'blog', tags('back\\slash')), ['back\\slash'], 'tags follow the same rule');
  assert.deepEqual(await listed(app, 'blog', tags('c:\\temp\\')), ['C:\\temp\\']);
});
