import assert from 'node:assert/strict';
import { test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { LightMyRequestResponse } from 'fastify';
import { buildBlogApp, noisyJpeg, postForm } from '../../test/blog-fixtures.js';
import { buildTestApp, json, type TestApp } from '../../test/helpers.js';
import { addVary, COMPRESSION_THRESHOLD } from './representation.js';

/** What a client reads from an answer, decoded by its Content-Encoding. */
function decoded(response: LightMyRequestResponse): string {
  const encoding = response.headers['content-encoding'];
  if (encoding === 'br') return brotliDecompressSync(response.rawPayload).toString('utf8');
  if (encoding === 'gzip') return gunzipSync(response.rawPayload).toString('utf8');
  assert.equal(encoding, undefined, `unexpected Content-Encoding ${encoding}`);
  return response.body;
}

/** A page whose record is several KB of JSON, and two more so the list is larger still. */
async function pages(t: Parameters<typeof buildTestApp>[0]): Promise<TestApp & { id: number }> {
  const app = await buildTestApp(t);
  let id = 0;
  for (let i = 0; i < 3; i++) {
    const created = await app.app.inject({
      method: 'POST',
      url: '/api/page',
      headers: app.site.headers,
      payload: { page_usertitle: `Page ${i}`, page_html_content: `<p>${'Opening hours and prices of the summer season. '.repeat(60)}</p>` },
    });
    assert.equal(created.statusCode, 201, created.body);
    id ||= json(created).data[0].page;
  }
  return { ...app, id };
}

test('gzip and br answers decode to exactly the uncompressed body, for a page and a list', async (t) => {
  const { app, site, id } = await pages(t);
  for (const url of [`/api/page/${id}`, '/api/page', '/webapps/api/page?pageSize=2']) {
    const plain = await app.inject({ url, headers: site.headers });
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: identity');
    assert.ok(plain.rawPayload.length >= COMPRESSION_THRESHOLD, `${url} is big enough to be compressed`);
    for (const encoding of ['gzip', 'br']) {
      const packed = await app.inject({ url, headers: { ...site.headers, 'accept-encoding': encoding } });
      assert.equal(packed.statusCode, 200);
      assert.equal(packed.headers['content-encoding'], encoding, url);
      assert.equal(decoded(packed), plain.body, `${url} in ${encoding} is the same body`);
      assert.ok(packed.rawPayload.length < plain.rawPayload.length / 3, `${url} in ${encoding} is much smaller`);
      assert.equal(packed.headers['content-type'], plain.headers['content-type']);
      assert.equal(packed.headers.vary, 'accept, accept-encoding');
      assert.equal(packed.headers.etag, plain.headers.etag, 'one ETag for every encoding');
    }
  }
});

test("the client's preference and q-values choose the encoding; identity when it asks for nothing we speak", async (t) => {
  const { app, site, id } = await pages(t);
  const cases: Array<[string, string | undefined]> = [
    ['gzip;q=0, br', 'br'],
    ['br;q=0, gzip', 'gzip'],
    ['gzip, br;q=0.5', 'gzip'],
    ['gzip, br', 'br'],
    ['deflate, gzip;q=0.2', 'gzip'],
    ['identity', undefined],
    ['compress, x-unknown', undefined],
    ['deflate', undefined],
    ['zstd', undefined],
    ['br;q=0, gzip;q=0', undefined],
    ['', undefined],
  ];
  const plain = await app.inject({ url: `/api/page/${id}`, headers: site.headers });
  for (const [accept, expected] of cases) {
    const answer = await app.inject({ url: `/api/page/${id}`, headers: { ...site.headers, 'accept-encoding': accept } });
    assert.equal(answer.statusCode, 200, accept);
    assert.equal(answer.headers['content-encoding'], expected, `Accept-Encoding: ${accept}`);
    assert.equal(decoded(answer), plain.body, accept);
    // Sent as it is or not, the answer depends on Accept-Encoding, so caches must key on it.
    assert.equal(answer.headers.vary, 'accept, accept-encoding', accept);
  }
});

test('bodies under 1 KB are sent as they are: a 404 problem, an empty list', async (t) => {
  const { app, site } = await buildTestApp(t);
  const missing = await app.inject({ url: '/api/page/999999', headers: { ...site.headers, 'accept-encoding': 'br, gzip' } });
  assert.equal(missing.statusCode, 404);
  assert.ok(missing.rawPayload.length < COMPRESSION_THRESHOLD);
  assert.equal(missing.headers['content-encoding'], undefined);
  assert.equal(missing.headers.vary, 'accept', 'no encoding to vary on; Accept chooses JSON or Markdown');
  assert.equal(json(missing).status, 404);

  // An empty list: a 200 with its ETag, a few dozen bytes.
  const empty = await app.inject({ url: '/api/page', headers: { ...site.headers, 'accept-encoding': 'gzip, br' } });
  assert.equal(empty.statusCode, 200);
  assert.deepEqual(json(empty).data, []);
  assert.equal(empty.headers['content-encoding'], undefined);
  assert.equal(empty.headers.vary, 'accept');
  assert.ok(empty.headers.etag);
});

test('problem+json errors of 1 KB or more are compressed and still read as problems', async (t) => {
  const { app } = await buildTestApp(t);
  // A 401 to a client that asks for JSON carries the endpoint's reference: well over 1 KB.
  const plain = await app.inject({ url: '/api/page', headers: { accept: 'application/json' } });
  assert.equal(plain.statusCode, 401);
  assert.ok(plain.rawPayload.length >= COMPRESSION_THRESHOLD, `${plain.rawPayload.length} bytes`);
  const packed = await app.inject({ url: '/api/page', headers: { accept: 'application/json', 'accept-encoding': 'br' } });
  assert.equal(packed.statusCode, 401);
  assert.equal(packed.headers['content-encoding'], 'br');
  assert.equal(packed.headers['content-type'], 'application/problem+json; charset=utf-8');
  assert.equal(packed.headers['www-authenticate'], plain.headers['www-authenticate']);
  const problem = JSON.parse(decoded(packed));
  assert.equal(problem.status, 401);
  assert.deepEqual(problem, json(plain));
});

test('the ETag is the same in every encoding: If-None-Match and If-Match accept it from a compressed answer', async (t) => {
  const { app, site, id } = await pages(t);
  const url = `/api/page/${id}`;
  const br = await app.inject({ url, headers: { ...site.headers, 'accept-encoding': 'br' } });
  const gzip = await app.inject({ url, headers: { ...site.headers, 'accept-encoding': 'gzip' } });
  const plain = await app.inject({ url, headers: site.headers });
  const tag = br.headers.etag as string;
  assert.match(tag, /^"[^"]+"$/, 'a strong tag');
  assert.equal(gzip.headers.etag, tag);
  assert.equal(plain.headers.etag, tag);

  for (const accept of ['gzip', 'br', 'identity']) {
    const cached = await app.inject({ url, headers: { ...site.headers, 'accept-encoding': accept, 'if-none-match': tag } });
    assert.equal(cached.statusCode, 304, accept);
    assert.equal(cached.rawPayload.length, 0);
    assert.equal(cached.headers['content-encoding'], undefined, 'a 304 has no body to encode');
    assert.equal(cached.headers.etag, tag);
    assert.equal(cached.headers.vary, 'accept, accept-encoding', 'a 304 varies as its 200 does');
  }
  const list = await app.inject({ url: '/api/page', headers: { ...site.headers, 'accept-encoding': 'gzip' } });
  const listTag = list.headers.etag as string;
  assert.equal((await app.inject({ url: '/api/page', headers: site.headers })).headers.etag, listTag);
  const listCached = await app.inject({
    url: '/api/page',
    headers: { ...site.headers, 'accept-encoding': 'br', 'if-none-match': listTag },
  });
  assert.equal(listCached.statusCode, 304);

  const updated = await app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...site.headers, 'if-match': tag, 'accept-encoding': 'br' },
    payload: { id, page_usertitle: 'Renamed' },
  });
  assert.equal(updated.statusCode, 200, updated.body);
  const newTag = updated.headers.etag as string;
  assert.notEqual(newTag, tag);
  const reread = await app.inject({ url, headers: { ...site.headers, 'accept-encoding': 'gzip' } });
  assert.equal(reread.headers.etag, newTag, 'the POST answers the tag a compressed GET then gives');
  const stale = await app.inject({ method: 'DELETE', url, headers: { ...site.headers, 'if-match': tag } });
  assert.equal(stale.statusCode, 412, 'the old tag no longer matches');
  const deleted = await app.inject({ method: 'DELETE', url, headers: { ...site.headers, 'if-match': newTag, 'accept-encoding': 'br' } });
  assert.equal(deleted.statusCode, 204);
  assert.equal(deleted.rawPayload.length, 0);
  assert.equal(deleted.headers['content-encoding'], undefined, 'a 204 has no body to encode');
});

test('HEAD answers as GET does, in identity: no body is compressed only to be thrown away', async (t) => {
  const { app, site, id } = await pages(t);
  for (const url of [`/api/page/${id}`, '/api/page']) {
    const plain = await app.inject({ url, headers: site.headers });
    const packed = await app.inject({ url, headers: { ...site.headers, 'accept-encoding': 'br' } });
    assert.equal(packed.headers['content-encoding'], 'br');
    const head = await app.inject({ method: 'HEAD', url, headers: { ...site.headers, 'accept-encoding': 'br' } });
    assert.equal(head.statusCode, 200);
    assert.equal(head.rawPayload.length, 0);
    // Identity is always a representation the server may choose; its length is the one stated.
    assert.equal(head.headers['content-encoding'], undefined);
    assert.equal(head.headers['content-length'], String(plain.rawPayload.length));
    assert.equal(head.headers.etag, packed.headers.etag);
    assert.equal(head.headers.vary, 'accept, accept-encoding');
    const cached = await app.inject({
      method: 'HEAD',
      url,
      headers: { ...site.headers, 'accept-encoding': 'br', 'if-none-match': plain.headers.etag as string },
    });
    assert.equal(cached.statusCode, 304);
  }
});

test('images are sent as they are stored, whatever the client accepts', async (t) => {
  const app = await buildBlogApp(t);
  const jpeg = await noisyJpeg(8 * 1024);
  const posted = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Photo' })],
    ['uploadPrimaryImage', { file: jpeg, filename: 'photo.jpg' }],
  ]);
  assert.equal(posted.statusCode, 201, posted.body);
  const served = await app.app.inject({ url: json(posted).data[0].info_img, headers: { 'accept-encoding': 'br, gzip' } });
  assert.equal(served.statusCode, 200);
  assert.equal(served.headers['content-encoding'], undefined);
  assert.equal(served.headers.vary, undefined);
  assert.equal(served.headers['content-length'], String(jpeg.length));
  assert.ok(served.rawPayload.equals(jpeg));
});

test('the OpenAPI document and Markdown references are compressed like the API', async (t) => {
  const { app } = await buildTestApp(t);
  for (const headers of [{}, { accept: 'text/markdown' }]) {
    const url = 'accept' in headers ? '/api/page' : '/api/openapi.json';
    const plain = await app.inject({ url, headers });
    assert.equal(plain.statusCode, 200);
    const packed = await app.inject({ url, headers: { ...headers, 'accept-encoding': 'gzip' } });
    assert.equal(packed.headers['content-encoding'], 'gzip', url);
    assert.equal(decoded(packed), plain.body);
  }
});

test('a request body with a Content-Encoding is not decompressed', async (t) => {
  const { app, site } = await buildTestApp(t);
  const created = await app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...site.headers, 'content-type': 'application/json', 'content-encoding': 'gzip' },
    payload: JSON.stringify({ page_usertitle: 'Plain JSON' }),
  });
  // Read as it is sent: the JSON is accepted, the header is not acted on.
  assert.equal(created.statusCode, 201, created.body);
});

test('a 304 carries the ETag and Vary of its 200, and neither Content-Length nor Content-Type of the body it does not have', async (t) => {
  const { app, site, id } = await pages(t);
  for (const [url, headers] of [
    [`/api/page/${id}`, site.headers],
    ['/api/page', site.headers],
    ['/api/page', { accept: 'text/markdown' }],
    ['/api/openapi.json', {}],
  ] as const) {
    const full = await app.inject({ url, headers: { ...headers, 'accept-encoding': 'gzip' } });
    assert.equal(full.statusCode, 200, url);
    const identity = await app.inject({ url, headers });
    for (const method of ['GET', 'HEAD'] as const) {
      const cached = await app.inject({
        method,
        url,
        headers: { ...headers, 'accept-encoding': 'gzip', 'if-none-match': String(full.headers.etag) },
      });
      assert.equal(cached.statusCode, 304, `${method} ${url}`);
      assert.equal(cached.rawPayload.length, 0);
      assert.equal(cached.headers.etag, full.headers.etag);
      assert.equal(cached.headers.vary, full.headers.vary, `${method} ${url}`);
      // A HEAD's 200 states the identity length, and its 304 may too; a GET's 304 states none.
      const length = method === 'HEAD' ? identity.headers['content-length'] : undefined;
      assert.equal(cached.headers['content-length'], length, `${method} ${url}: the 200's length, or none`);
      assert.equal(cached.headers['content-type'], undefined, `${method} ${url}`);
    }
  }
});

test('addVary adds a field once, keeps the fields before it and leaves Vary: * alone', () => {
  const varyAfter = (before: string | undefined, field: string) => {
    let vary = before;
    addVary({ getHeader: () => vary, header: (_name: string, value: string) => (vary = value) }, field);
    return vary;
  };
  assert.equal(varyAfter(undefined, 'accept'), 'accept');
  assert.equal(varyAfter('Origin', 'accept-encoding'), 'Origin, accept-encoding');
  assert.equal(varyAfter('accept', 'accept-encoding'), 'accept, accept-encoding');
  assert.equal(varyAfter('Origin, Accept-Encoding', 'accept-encoding'), 'Origin, Accept-Encoding');
  assert.equal(varyAfter('*', 'accept'), '*');
  assert.equal(varyAfter(' , Origin,', 'accept'), 'Origin, accept');
});
