import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json, type TestApp } from '../../../test/helpers.js';

async function create(t: TestApp, body: Record<string, unknown>) {
  const response = await t.app.inject({ method: 'POST', url: '/api/page', headers: t.site.headers, payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

test('aliases of titles in other scripts are transliterated', async (t) => {
  const app = await buildTestApp(t);
  assert.equal((await create(app, { page_usertitle: 'Straße Øl' })).page_alias, 'strasse-ol');
  assert.equal((await create(app, { page_usertitle: 'Привет мир' })).page_alias, 'privet-mir');
  assert.equal((await create(app, { page_usertitle: 'Καλημέρα κόσμε' })).page_alias, 'kalimera-kosme');
  assert.equal((await create(app, { page_usertitle: 'Strasse ol' })).page_alias, 'strasse-ol-2', 'still unique within the website');
});
