import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json } from '../../../test/helpers.js';

test('a page is inserted, read back and listed', async (t) => {
  const { app, site } = await buildTestApp(t);
  const created = await app.inject({
    method: 'POST',
    url: '/api/page',
    headers: site.headers,
    payload: { page_usertitle: 'About us', page_html_content: '<p>Hello <b>world</b></p>' },
  });
  assert.equal(created.statusCode, 201, created.body);
  const record = json(created).data[0];
  assert.equal(record.page_usertitle, 'About us');
  assert.equal(record.page_alias, 'about-us');
  assert.equal(record.id, record.page);
  assert.equal(created.headers.location, `/api/page/${record.page}`);
  assert.match(record.page_dt_begin, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);

  const one = await app.inject({ url: `/api/page/${record.page}`, headers: site.headers });
  assert.equal(one.statusCode, 200);
  assert.deepEqual(json(one).data[0], record);
  assert.deepEqual(json(one).meta, { total: 1, offset: 0, pageSize: 200 });

  const list = await app.inject({ url: '/webapps/api/page', headers: site.headers });
  assert.equal(list.statusCode, 200);
  assert.equal(json(list).meta.total, 1);
});
