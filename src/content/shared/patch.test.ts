import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json } from '../../../test/helpers.js';

for (const resource of ['page', 'blog'] as const) {
  test(`PATCH /api/${resource}/<id> updates only the fields sent, honours If-Match, and names the record in the path only`, async (t) => {
    const app = await buildTestApp(t);
    const { headers } = app.site;
    const home = json(await app.app.inject({ method: 'POST', url: '/api/page', headers, payload: { page_usertitle: 'Home' } })).data[0];
    const [title, summary, idField] =
      resource === 'page' ? (['page_usertitle', 'page_summary', 'page'] as const) : (['info_title', 'info_summary', 'info_id'] as const);
    const createdBody =
      resource === 'page'
        ? { page_usertitle: 'First', page_summary: 'kept' }
        : { page: home.page, info_title: 'First', info_summary: 'kept' };
    const created = await app.app.inject({ method: 'POST', url: `/api/${resource}`, headers, payload: createdBody });
    const record = json(created).data[0];
    const id = record[idField] as number;
    const url = `/api/${resource}/${id}`;

    const patched = await app.app.inject({
      method: 'PATCH',
      url,
      headers: { ...headers, 'if-match': String(created.headers.etag) },
      payload: { [title]: 'Second' },
    });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal(json(patched).data[0][title], 'Second');
    assert.equal(json(patched).data[0][summary], 'kept', 'a field not sent stays as it was');
    assert.notEqual(patched.headers.etag, created.headers.etag);
    const got = await app.app.inject({ url, headers });
    assert.equal(json(got).data[0][title], 'Second');

    const stale = await app.app.inject({
      method: 'PATCH',
      url,
      headers: { ...headers, 'if-match': String(created.headers.etag) },
      payload: { [title]: 'Third' },
    });
    assert.equal(stale.statusCode, 412, 'an ETag from before the last change is refused');
    assert.equal(json(await app.app.inject({ url, headers })).data[0][title], 'Second', 'and nothing is written');

    const other = await app.app.inject({ method: 'PATCH', url, headers, payload: { id: id + 1, [title]: 'x' } });
    assert.equal(other.statusCode, 400);
    assert.equal(json(other).errors[0].field, 'id');
    const same = await app.app.inject({ method: 'PATCH', url, headers, payload: { id, [title]: 'Same id' } });
    assert.equal(same.statusCode, 200);

    const form = await app.app.inject({
      method: 'PATCH',
      url: `/webapps${url}`,
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ data: JSON.stringify({ [summary]: 'from a form' }) }).toString(),
    });
    assert.equal(form.statusCode, 200, form.body);
    assert.equal(json(form).data[0][summary], 'from a form');

    const missing = await app.app.inject({ method: 'PATCH', url: `/api/${resource}/999999`, headers, payload: { [title]: 'x' } });
    assert.equal(missing.statusCode, 404);
    const foreign = await app.addSite('Other');
    const elsewhere = await app.app.inject({ method: 'PATCH', url, headers: foreign.headers, payload: { [title]: 'Stolen' } });
    assert.equal(elsewhere.statusCode, 404, 'another website’s record is not there');
    const invalid = await app.app.inject({ method: 'PATCH', url, headers, payload: { [title]: 5 } });
    assert.equal(invalid.statusCode, 400);
    assert.equal(json(invalid).errors[0].field, title);
  });
}
