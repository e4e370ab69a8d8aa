import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json, type TestApp } from '../../../test/helpers.js';

async function create(t: TestApp, body: Record<string, unknown>) {
  const response = await t.app.inject({ method: 'POST', url: '/api/page', headers: t.site.headers, payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

async function titles(t: TestApp, keywords: string): Promise<string[]> {
  const response = await t.app.inject({ url: `/api/page?keywords=${encodeURIComponent(keywords)}`, headers: t.site.headers });
  assert.equal(response.statusCode, 200, response.body);
  return json(response).data.map((p: { page_usertitle: string }) => p.page_usertitle);
}

test('aliases of titles in other scripts are transliterated', async (t) => {
  const app = await buildTestApp(t);
  assert.equal((await create(app, { page_usertitle: 'Straße Øl' })).page_alias, 'strasse-ol');
  assert.equal((await create(app, { page_usertitle: 'Привет мир' })).page_alias, 'privet-mir');
  assert.equal((await create(app, { page_usertitle: 'Καλημέρα κόσμε' })).page_alias, 'kalimera-kosme');
  assert.equal((await create(app, { page_usertitle: 'Strasse ol' })).page_alias, 'strasse-ol-2', 'still unique within the website');
});

test('keywords find words written as HTML character references', async (t) => {
  const app = await buildTestApp(t);
  await create(app, { page_usertitle: 'Menu', page_html_content: '<p>Caf&eacute; &amp; cr&#232;me</p>' });
  await create(app, { page_usertitle: 'Dots', page_html_intro: 'Wait&hellip;for&nbsp;it &#x2014; na&#xEF;ve' });
  assert.deepEqual(await titles(app, 'café'), ['Menu']);
  assert.deepEqual(await titles(app, 'crème'), ['Menu']);
  assert.deepEqual(await titles(app, 'Café crème'), ['Menu']);
  assert.deepEqual(await titles(app, 'eacute'), [], 'the reference itself is not a word of the text');
  assert.deepEqual(await titles(app, 'wait for it naïve'), ['Dots']);
});
