import assert from 'node:assert/strict';
import { test } from 'node:test';
import { form, image } from '../../../test/blog-fixtures.js';
import { buildTestApp, json, type TestApp } from '../../../test/helpers.js';
import { buildApp } from '../../app.js';
import { testConfig } from '../../config.js';

/** A page to hang blogs on. */
async function aPage(app: TestApp): Promise<number> {
  const created = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: app.site.headers,
    payload: { page_usertitle: 'Home' },
  });
  assert.equal(created.statusCode, 201, created.body);
  return json(created).data[0].page;
}

const urlEncoded = (fields: Record<string, string>) => ({
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  payload: new URLSearchParams(fields).toString(),
});

/** A urlencoded body, as written, posted to /api/page with the site's credential. */
const postForm = (app: TestApp, payload: string) =>
  app.app.inject({ method: 'POST', url: '/api/page', headers: { ...app.site.headers, ...urlEncoded({}).headers }, payload });

test('the API ID and key are taken as the hosted platform sends them: headers in any letter case, the query, form fields', async (t) => {
  const app = await buildTestApp(t);
  const { apiId, apiKey } = app.site;
  const page = await aPage(app);
  const got = async (options: { url?: string; headers?: Record<string, string> }) => {
    const response = await app.app.inject({ url: options.url ?? `/api/page/${page}`, headers: options.headers ?? {} });
    return response.statusCode;
  };
  assert.equal(await got({ headers: { apiID: apiId, apiKey } }), 200, 'apiID and apiKey headers');
  assert.equal(await got({ headers: { APIID: apiId, apikey: apiKey } }), 200, 'in any letter case');
  assert.equal(await got({ headers: { 'X-Api-Id': apiId, 'X-Api-Key': apiKey } }), 200, 'X-Api-Id and X-Api-Key still');
  assert.equal(await got({ headers: app.site.headers }), 200, 'HTTP Basic still');
  const query = `apiID=${encodeURIComponent(apiId)}&apiKey=${encodeURIComponent(apiKey)}`;
  assert.equal(await got({ url: `/api/page/${page}?${query}` }), 200, 'query parameters of a GET by id (which takes no others)');
  assert.equal(await got({ url: `/webapps/api/page?${query}&pageSize=1` }), 200, 'beside a list’s own parameters');
  assert.equal(await got({ url: `/api/page/${page}?apiid=${encodeURIComponent(apiId)}&APIKEY=${encodeURIComponent(apiKey)}` }), 200);

  const wrong = await app.app.inject({ url: `/api/page/${page}`, headers: { apiID: apiId, apiKey: `${apiKey}x` } });
  assert.equal(wrong.statusCode, 401);
  assert.match(json(wrong).detail, /do not match an active credential/);
  const half = await app.app.inject({ url: `/api/page/${page}?apiID=${encodeURIComponent(apiId)}` });
  assert.equal(half.statusCode, 401);
  assert.match(json(half).detail, /apiID and apiKey/);

  // As form fields, beside `data`, in a urlencoded and in a multipart body, before or after it.
  const posted = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    ...urlEncoded({ apiID: apiId, apiKey, data: JSON.stringify({ page_usertitle: 'From a form' }) }),
  });
  assert.equal(posted.statusCode, 201, posted.body);
  assert.equal(json(posted).data[0].page_usertitle, 'From a form');
  const multipart = await form([
    ['data', JSON.stringify({ page, info_title: 'Multipart, key after data' })],
    ['apiID', apiId],
    ['apiKey', apiKey],
  ]);
  const blog = await app.app.inject({ method: 'POST', url: '/api/blog', headers: multipart.headers, payload: multipart.payload });
  assert.equal(blog.statusCode, 201, blog.body);
  const anonymous = await form([['data', JSON.stringify({ page, info_title: 'Nobody' })]]);
  const refused = await app.app.inject({ method: 'POST', url: '/api/blog', headers: anonymous.headers, payload: anonymous.payload });
  assert.equal(refused.statusCode, 401, 'a form without credentials is refused before its data is used');
  const wrongForm = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    ...urlEncoded({ apiID: apiId, apiKey: 'nope', data: '{"page_usertitle":"x"' }),
  });
  assert.equal(wrongForm.statusCode, 401, 'credentials are checked before the data field is read');
});

test('a multipart upload without credentials stores no file; with them in the form, its images are kept', async (t) => {
  const app = await buildTestApp(t);
  const page = await aPage(app);
  const cover = await image('png', 12, 8);
  const fields = (withKey: boolean) =>
    form([
      ...(withKey
        ? ([
            ['apiID', app.site.apiId],
            ['apiKey', app.site.apiKey],
          ] as Array<[string, string]>)
        : []),
      ['data', JSON.stringify({ page, info_title: 'With a cover' })],
      ['uploadPrimaryImage', { file: cover, filename: 'cover.png' }],
    ]);
  const anonymous = await fields(false);
  const refused = await app.app.inject({ method: 'POST', url: '/api/blog', headers: anonymous.headers, payload: anonymous.payload });
  assert.equal(refused.statusCode, 401);
  assert.match(json(refused).detail, /apiID and apiKey must come before the first file/);
  assert.equal((await app.db.kysely.selectFrom('images').select('name').execute()).length, 0, 'nothing stored');
  // Credentials after the file: refused, with the same advice, and still nothing stored.
  const late = await form([
    ['data', JSON.stringify({ page, info_title: 'Credentials last' })],
    ['uploadPrimaryImage', { file: cover, filename: 'cover.png' }],
    ['apiID', app.site.apiId],
    ['apiKey', app.site.apiKey],
  ]);
  const tooLate = await app.app.inject({ method: 'POST', url: '/api/blog', headers: late.headers, payload: late.payload });
  assert.equal(tooLate.statusCode, 401);
  assert.match(json(tooLate).detail, /In a multipart form, apiID and apiKey must come before the first file/);
  assert.equal((await app.db.kysely.selectFrom('images').select('name').execute()).length, 0, 'nothing stored');
  const keyed = await fields(true);
  const saved = await app.app.inject({ method: 'POST', url: '/api/blog', headers: keyed.headers, payload: keyed.payload });
  assert.equal(saved.statusCode, 201, saved.body);
  assert.equal(json(saved).data[0].info_img_json.width, 12);
});

test('JSON is taken as application/json, text/json, or the data field of a form, for pages and blogs alike; a 415 names them', async (t) => {
  const app = await buildTestApp(t);
  const page = await aPage(app);
  const asTextJson = await app.app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: { ...app.site.headers, 'content-type': 'text/json' },
    payload: JSON.stringify({ page, info_title: 'text/json' }),
  });
  assert.equal(asTextJson.statusCode, 201, asTextJson.body);
  const pageAsTextJson = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...app.site.headers, 'content-type': 'text/json; charset=utf-8' },
    payload: JSON.stringify({ page_menuname: 'Menu' }),
  });
  assert.equal(pageAsTextJson.statusCode, 201, pageAsTextJson.body);
  const blogForm = await app.app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: { ...app.site.headers, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ data: JSON.stringify({ page, info_title: 'Café, urlencoded' }) }).toString(),
  });
  assert.equal(blogForm.statusCode, 201, blogForm.body);
  assert.equal(json(blogForm).data[0].info_title, 'Café, urlencoded');
  const pageForm = await form([['data', JSON.stringify({ page_usertitle: 'Multipart page' })]]);
  const pageMultipart = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...app.site.headers, ...pageForm.headers },
    payload: pageForm.payload,
  });
  assert.equal(pageMultipart.statusCode, 201, pageMultipart.body);

  // The data field is held to the body's own schema, its errors named under `data`.
  const invalid = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    ...urlEncoded({ data: JSON.stringify({ page_usertitle: 'x', page_order: 'first' }) }),
    headers: { ...app.site.headers, 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(invalid.statusCode, 400);
  assert.equal(json(invalid).errors[0].field, 'page_order');
  const notJson = await postForm(app, 'data=%7Bnot');
  assert.equal(notJson.statusCode, 400);
  assert.equal(json(notJson).errors[0].field, 'data');
  assert.match(json(notJson).errors[0].message, /is not valid JSON/);
  const stray = await postForm(app, 'data=%7B%7D&colour=red');
  assert.equal(stray.statusCode, 400);
  assert.equal(json(stray).errors[0].field, 'colour');
  const noData = await postForm(app, 'page_usertitle=x');
  assert.equal(noData.statusCode, 400);
  // A field sent twice: the answer says to send it once.
  const twoData = await postForm(app, 'data=%7B%7D&data=%7B%7D');
  assert.equal(twoData.statusCode, 400);
  assert.equal(json(twoData).detail, 'The form has more than one data field: send the record as one JSON object, in one data field.');
  const twoDataParts = await form([
    ['data', JSON.stringify({ page_usertitle: 'One' })],
    ['data', JSON.stringify({ page_usertitle: 'Two' })],
  ]);
  const twoDataMultipart = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...app.site.headers, ...twoDataParts.headers },
    payload: twoDataParts.payload,
  });
  assert.equal(
    json(twoDataMultipart).detail,
    'The form has more than one data field: send the record as one JSON object, in one data field.',
  );
  const twoKeys = await form([
    ['apiID', app.site.apiId],
    ['apiID', app.site.apiId],
    ['data', JSON.stringify({ page_usertitle: 'Twice' })],
  ]);
  const twoKeysMultipart = await app.app.inject({ method: 'POST', url: '/api/page', headers: twoKeys.headers, payload: twoKeys.payload });
  assert.equal(twoKeysMultipart.statusCode, 400, twoKeysMultipart.body);
  assert.equal(json(twoKeysMultipart).detail, 'The form has more than one apiID field: send it once.');
  // curl -d '{…}' without -H: JSON labelled as a form, which the answer says.
  for (const payload of ['{"page_usertitle":"From curl"}', '[1]']) {
    const curlDefault = await postForm(app, payload);
    assert.equal(curlDefault.statusCode, 400, payload);
    assert.match(json(curlDefault).detail, /looks like JSON, .*curl -d.*send the header Content-Type: application\/json\.$/, payload);
  }

  const xml = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...app.site.headers, 'content-type': 'application/xml' },
    payload: '<page/>',
  });
  assert.equal(xml.statusCode, 415);
  for (const type of ['application/json', 'text/json', 'application/x-www-form-urlencoded', 'multipart/form-data']) {
    assert.ok(json(xml).detail.includes(type), `the 415 names ${type}: ${json(xml).detail}`);
  }
});

// 200,000 fields in 400 KB: copying the field's values for each repeat took minutes of CPU, one
// pass takes milliseconds; the test's timeout, far from both, tells them apart on any machine.
test('a form that repeats one field many times is read in one pass: an anonymous one is refused at once, not after holding the server', {
  timeout: 60_000,
}, async (t) => {
  const app = await buildTestApp(t);
  const repeated = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'a&'.repeat(200_000),
  });
  assert.equal(repeated.statusCode, 400, repeated.body);
  assert.equal(json(repeated).errors[0].field, 'a');

  // A field named after an Object property is a field like any other: unknown, and refused.
  for (const name of ['__proto__', 'constructor']) {
    const answer = await postForm(app, `${name}=x&${name}=y&data=${encodeURIComponent('{"page_usertitle":"x"}')}`);
    assert.equal(answer.statusCode, 400, `${name}: ${answer.body}`);
    assert.equal(json(answer).errors[0].field, name);
  }
});

test('LEGACY_QUERY_CREDENTIALS=false refuses credentials in the query with a 400 that says to use headers', async (t) => {
  const app = await buildTestApp(t, { config: { legacyQueryCredentials: false } });
  const refused = await app.app.inject({ url: `/api/page?apiID=${app.site.apiId}&apiKey=${app.site.apiKey}` });
  assert.equal(refused.statusCode, 400);
  assert.match(json(refused).detail, /send them as headers/);
  const headers = await app.app.inject({ url: '/api/page', headers: { apiID: app.site.apiId, apiKey: app.site.apiKey } });
  assert.equal(headers.statusCode, 200);
});

test('one credential is one rate-limit count, however it is sent', async (t) => {
  const app = await buildTestApp(t, { config: { rateLimits: { api: 4, token: 0 } } });
  const { apiId, apiKey } = app.site;
  const remaining: string[] = [];
  for (const options of [
    { url: '/api/page', headers: app.site.headers },
    { url: '/api/page', headers: { apiID: apiId, apiKey } },
    { url: `/api/page?apiID=${apiId}&apiKey=${apiKey}`, headers: {} },
    { url: '/api/page', headers: { 'x-api-id': apiId, 'x-api-key': apiKey } },
  ]) {
    const response = await app.app.inject(options);
    assert.equal(response.statusCode, 200);
    remaining.push(String(response.headers.ratelimit));
  }
  assert.deepEqual(
    remaining.map((r) => /;r=(\d+);/.exec(r)?.[1]),
    ['3', '2', '1', '0'],
  );
  const form = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    ...urlEncoded({ apiID: apiId, apiKey, data: '{"page_usertitle":"over"}' }),
  });
  assert.equal(form.statusCode, 429, 'a form with the same credential counts against the same limit');
});

test('credentials sent in the query string or a form are never written to the log, at any level', async (t) => {
  const lines: string[] = [];
  const { createTestDatabase, addTestSite } = await import('../../../test/helpers.js');
  const db = await createTestDatabase(t);
  const app = await buildApp({ config: testConfig({ logLevel: 'trace' }), db, logStream: { write: (line: string) => lines.push(line) } });
  t.after(() => app.close());
  const site = await addTestSite(db);
  const secret = encodeURIComponent(site.apiKey);
  const id = encodeURIComponent(site.apiId);
  const page = await app.inject({ method: 'POST', url: `/api/page?apiID=${id}&apiKey=${secret}`, payload: { page_usertitle: 'Logged' } });
  assert.equal(page.statusCode, 201, page.body);
  for (const url of [
    `/api/page/${json(page).data[0].page}?apiID=${id}&apiKey=${secret}`,
    `/api/page?apiKey=${secret}&apiID=${id}&orderBy=nonsense`,
    `/api/page/999999?apiID=${id}&apiKey=${secret}`,
    `/api/page/1?apiID=${id}&apiKey=${secret}x`,
    `/api/nowhere?apiID=${id}&apiKey=${secret}`,
    `/api/page?APIKEY=${secret}&apiid=${id}`,
  ]) {
    await app.inject({ url });
  }
  // A name with a percent-encoded letter is the same parameter to the query parser: it authenticates, and is redacted.
  for (const url of [`/api/page?api%49D=${id}&api%4Bey=${secret}`, `/api/page?apiID=${id}&%61pi%6bey=${secret}`]) {
    assert.equal((await app.inject({ url })).statusCode, 200, url);
  }
  await app.inject({ url: `/api/page?access%5Ftoken=${secret}` });
  const multipart = await form([
    ['apiID', site.apiId],
    ['apiKey', site.apiKey],
    ['data', JSON.stringify({ page_usertitle: 'Multipart' })],
  ]);
  await app.inject({ method: 'POST', url: '/api/page', headers: multipart.headers, payload: multipart.payload });
  await app.inject({ method: 'GET', url: '/api/page', headers: { apiID: site.apiId, apiKey: site.apiKey } });
  assert.ok(
    lines.some((line) => line.includes('apiKey=[redacted]')),
    'the requests were logged, their URLs with the key redacted',
  );
  assert.ok(
    lines.some((line) => line.includes('busboy')),
    'the multipart parser logged its options at trace',
  );
  const leaked = lines.filter((line) => line.includes(site.apiKey) || line.includes(secret));
  assert.deepEqual(leaked, []);
});
