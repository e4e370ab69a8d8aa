import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, json } from '../../test/helpers.js';

/** The fields an answer's Vary names, in lower case. */
function varied(response: LightMyRequestResponse): string[] {
  const vary = response.headers.vary;
  return vary === undefined
    ? []
    : String(vary)
        .split(',')
        .map((field) => field.trim().toLowerCase());
}

const MARKDOWN = { accept: 'text/markdown' };

test('every answer of a GET or HEAD that also answers Markdown carries Vary: Accept, JSON and Markdown, 304s and errors alike', async (t) => {
  const { app, site } = await buildTestApp(t, { config: { corsOrigins: ['https://app.example'] } });
  const created = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'Varied' } });
  const id = json(created).data[0].page;
  const urls = [
    `/api/page/${id}`,
    '/api/page',
    `/webapps/api/page/${id}`,
    '/api/blog',
    '/api/changes',
    `/api/page/${id}/revisions`,
    '/api/webhooks',
  ];
  for (const url of urls) {
    for (const method of ['GET', 'HEAD'] as const) {
      const asJson = await app.inject({ method, url, headers: site.headers });
      assert.equal(asJson.statusCode, 200, `${method} ${url}`);
      assert.ok(varied(asJson).includes('accept'), `${method} ${url} as JSON: Vary ${asJson.headers.vary}`);
      assert.ok(varied(asJson).includes('origin'), `${method} ${url}: the Vary set before is kept`);

      const asMarkdown = await app.inject({ method, url, headers: { ...site.headers, ...MARKDOWN } });
      assert.ok(varied(asMarkdown).includes('accept'), `${method} ${url} as Markdown: Vary ${asMarkdown.headers.vary}`);

      const notModified = await app.inject({ method, url, headers: { ...site.headers, 'if-none-match': String(asJson.headers.etag) } });
      assert.equal(notModified.statusCode, 304, `${method} ${url}`);
      assert.ok(varied(notModified).includes('accept'), `${method} ${url}: a 304 varies as its 200 does`);

      // The 401's body depends on Accept too: the JSON reference only for a client that names JSON.
      const anonymous = await app.inject({ method, url, headers: { accept: 'application/json' } });
      assert.equal(anonymous.statusCode, 401);
      assert.ok(varied(anonymous).includes('accept'), `${method} ${url}: the 401`);
    }
  }
  const missing = await app.inject({ url: '/api/page/999999', headers: site.headers });
  assert.equal(missing.statusCode, 404);
  assert.deepEqual(varied(missing).sort(), ['accept', 'origin']);

  const big = await app.inject({ url: `/api/page/${id}`, headers: MARKDOWN });
  assert.deepEqual(varied(big).sort(), ['accept', 'accept-encoding', 'origin'], 'merged with the compression Vary, each once');

  // Nothing else answers Markdown, so nothing else varies on Accept.
  for (const url of ['/api/openapi.json', '/healthz', '/api/nothing']) {
    const response = await app.inject({ url, headers: site.headers });
    assert.ok(!varied(response).includes('accept'), `${url}: Vary ${response.headers.vary}`);
  }
  const written = await app.inject({ method: 'PATCH', url: `/api/page/${id}`, headers: site.headers, payload: {} });
  assert.equal(written.statusCode, 200);
  assert.ok(!varied(written).includes('accept'), 'a write answers JSON whatever Accept says');
});

test('HEAD with Accept: text/markdown answers the headers the GET of the Markdown reference would, without the body', async (t) => {
  const { app, site } = await buildTestApp(t);
  for (const url of ['/api/page/1', '/webapps/api/blog', '/api/changes']) {
    const get = await app.inject({ url, headers: MARKDOWN });
    assert.equal(get.statusCode, 200);
    assert.equal(get.headers['content-type'], 'text/markdown; charset=utf-8');
    for (const headers of [MARKDOWN, { ...site.headers, ...MARKDOWN }]) {
      const head = await app.inject({ method: 'HEAD', url, headers });
      assert.equal(head.statusCode, 200, url);
      assert.equal(head.headers['content-type'], get.headers['content-type'], url);
      assert.equal(head.headers['content-length'], get.headers['content-length'], url);
      assert.equal(head.headers.etag, get.headers.etag, url);
      assert.equal(head.headers.vary, get.headers.vary, url);
      assert.equal(head.rawPayload.length, 0);
    }
    const current = await app.inject({ method: 'HEAD', url, headers: { ...MARKDOWN, 'if-none-match': String(get.headers.etag) } });
    assert.equal(current.statusCode, 304, `${url}: the Markdown's own ETag revalidates it`);
  }
});

test('Accept: text/markdown;q=0 refuses Markdown: the answer is the JSON one', async (t) => {
  const { app, site } = await buildTestApp(t);
  for (const accept of ['text/markdown;q=0', 'text/markdown; q=0.0', 'application/json;q=0.1, text/markdown;q=0']) {
    const answer = await app.inject({ url: '/api/page', headers: { ...site.headers, accept } });
    assert.equal(answer.statusCode, 200, accept);
    assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8', accept);
    const anonymous = await app.inject({ url: '/api/page', headers: { accept } });
    assert.equal(anonymous.statusCode, 401, `${accept}: no Markdown, so credentials are needed`);
  }
  const preferred = await app.inject({ url: '/api/page', headers: { accept: 'application/json;q=0.1, text/markdown;q=0.2' } });
  assert.equal(preferred.headers['content-type'], 'text/markdown; charset=utf-8', 'a low q-value still counts');
});

test('the Markdown references and the OpenAPI document are public and revalidated before each use', async (t) => {
  const { app, site } = await buildTestApp(t);
  for (const [url, headers] of [
    ['/api/page/1', MARKDOWN],
    ['/webapps/api/page', { ...site.headers, ...MARKDOWN }],
    ['/api/openapi.json', {}],
    ['/api/openapi.json', site.headers],
  ] as const) {
    const answer = await app.inject({ url, headers });
    assert.equal(answer.statusCode, 200, url);
    assert.equal(answer.headers['cache-control'], 'no-cache', url);
    const again = await app.inject({ url, headers: { ...headers, 'if-none-match': String(answer.headers.etag) } });
    assert.equal(again.statusCode, 304, url);
    assert.equal(again.headers['cache-control'], 'no-cache', `${url}: the 304 says what its 200 said`);
  }
});
