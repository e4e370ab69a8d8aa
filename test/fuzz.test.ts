import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import type { TSchema } from 'typebox';
import { BlogQuery, BlogWrite, BlogWriteQuery } from '../src/content/blogs/blog.schemas.js';
import { PageQuery, PageWrite } from '../src/content/pages/page.schemas.js';
import { NoQuery } from '../src/content/shared/envelope.js';
import { type BlogTestApp, buildBlogApp, image, postForm } from './blog-fixtures.js';
import { garbageBody, hostileString, pathSegment, queryString, schemaBody } from './fuzz.arbitraries.js';
import { answered, assertAnswer, contentState, fuzz } from './fuzz.checks.js';
import { multipartBody } from './fuzz.multipart.js';
import { json } from './helpers.js';

const PREFIXES = ['/api', '/webapps/api'] as const;

interface Fixture extends BlogTestApp {
  pageIds: number[];
  blogIds: number[];
  /** Pages deleted after an update: their revisions stay, and restoring one brings it back (or is refused: its parent is gone). */
  deletedPageIds: number[];
  imageNames: string[];
  images: Array<{ file: Buffer; filename: string }>;
}

/** An app with no API rate limit (thousands of requests a minute), two pages, and a blog with an image. */
async function fixture(t: TestContext): Promise<Fixture> {
  const app = await buildBlogApp(t, { rateLimits: { api: 0, token: 0 } });
  const child = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: app.site.headers,
    payload: { page_usertitle: 'Child', page_parent: app.pageId },
  });
  const images = await Promise.all(
    (['png', 'jpeg', 'gif', 'webp'] as const).map(async (f) => ({ file: await image(f, 3, 2), filename: `tiny.${f}` })),
  );
  const blog = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Seeded' })],
    ['uploadPrimaryImage', { ...images[0]!, type: 'image/png' }],
  ]);
  const record = json(blog).data[0];
  const childId = json(child).data[0].page as number;
  // Revisions to list, read and restore: updates of the child and the blog, and a deleted page.
  const history = async (method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => {
    const response = await app.app.inject({ method, url, headers: app.site.headers, ...(payload ? { payload } : {}) });
    assert.ok(response.statusCode < 300, `${method} ${url}: ${response.body}`);
    return response;
  };
  await history('PATCH', `/api/page/${childId}`, { page_summary: 'second revision' });
  await history('PATCH', `/api/page/${childId}`, { page_parent: 0 });
  await history('PATCH', `/api/blog/${record.info_id}`, { info_title: 'Seeded, revised' });
  const doomed = json(await history('POST', '/api/page', { page_usertitle: 'Deleted', page_parent: childId })).data[0].page as number;
  await history('PATCH', `/api/page/${doomed}`, { page_summary: 'before its delete' });
  await history('DELETE', `/api/page/${doomed}`);
  // And one whose parent went after it: restoring it is refused (409).
  const gone = json(await history('POST', '/api/page', { page_usertitle: 'Parent' })).data[0].page as number;
  const orphan = json(await history('POST', '/api/page', { page_usertitle: 'Orphan', page_parent: gone })).data[0].page as number;
  await history('DELETE', `/api/page/${orphan}`);
  await history('DELETE', `/api/page/${gone}`);
  return {
    ...app,
    pageIds: [app.pageId, childId],
    blogIds: [record.info_id],
    deletedPageIds: [doomed, orphan],
    imageNames: [String(record.info_img).replace('/images/', '')],
    images,
  };
}

/** Only characters an HTTP client can put in a header value. */
const headerText = hostileString.map((s) => s.replace(/[^\x20-\x7e]/g, ''));

/** Who calls: the site's key nearly always; sometimes nobody, or credentials that are wrong in some way. */
function credentials(app: Fixture): fc.Arbitrary<Record<string, string>> {
  const basic = (text: string) => ({ authorization: `Basic ${Buffer.from(text).toString('base64')}` });
  return fc.oneof(
    { arbitrary: fc.constant(app.site.headers), weight: 60 },
    { arbitrary: fc.constant({}), weight: 1 },
    { arbitrary: headerText.map((s) => ({ authorization: s })), weight: 1 },
    { arbitrary: headerText.map((s) => ({ authorization: `Bearer ${s}` })), weight: 1 },
    { arbitrary: fc.string().map((s) => basic(s)), weight: 1 },
    { arbitrary: headerText.map((s) => basic(`${app.site.apiId}:${s}`)), weight: 1 },
    { arbitrary: headerText.map((s) => ({ 'x-api-id': app.site.apiId, ...(s ? { 'x-api-key': s } : {}) })), weight: 1 },
  );
}

/** Conditional and content-negotiation headers, present or not. */
const extraHeaders: fc.Arbitrary<Record<string, string>> = fc.record(
  {
    'if-match': fc.oneof(fc.constantFrom('*', 'W/"x"', '"x"', '""', ', ,'), headerText),
    'if-none-match': fc.oneof(fc.constantFrom('*', 'W/"x"', '"x"'), headerText),
    accept: fc.oneof(
      fc.constantFrom('text/markdown', 'text/markdown;q=0.1, application/json', 'application/json;q=x', '*/*;q=0'),
      headerText,
    ),
  },
  { requiredKeys: [] },
);

function send(app: Fixture, options: InjectOptions) {
  return answered(app.app.inject(options), `${options.method ?? 'GET'} ${options.url}`);
}

/** A write, checked: never a 5xx, a 4xx is a problem, and after a 4xx nothing changed. */
async function write(app: Fixture, options: InjectOptions, what: string): Promise<number> {
  const before = await contentState(app.db, app.imagesDir);
  const response = await send(app, options);
  assertAnswer(response, what);
  if (response.statusCode >= 400) {
    const after = await contentState(app.db, app.imagesDir);
    if (after !== before) throw new Error(`${what}: refused with ${response.statusCode} but left a change behind\n${response.body}`);
  } else {
    await prune(app);
  }
  return response.statusCode;
}

/**
 * Keeps the tables small: every case compares all of their rows, so a long run that let the
 * accepted inserts pile up would slow down case by case. The seeded records stay.
 */
async function prune(app: Fixture): Promise<void> {
  const k = app.db.kysely;
  const count = async (table: 'pages' | 'blogs') =>
    Number(
      (
        await k
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  if ((await count('pages')) + (await count('blogs')) < 30) return;
  await k.deleteFrom('blogs').where('info_id', 'not in', app.blogIds).execute();
  await k.deleteFrom('blogs').where('page', 'not in', app.pageIds).execute();
  await k.deleteFrom('pages').where('page', 'not in', app.pageIds).execute();
}

test('GET /api/page and /api/blog with any query string', async (t) => {
  const app = await fixture(t);
  const request = fc.record({
    prefix: fc.constantFrom(...PREFIXES),
    target: fc.oneof(
      queryString(PageQuery).map((query) => `page${query}`),
      queryString(BlogQuery).map((query) => `blog${query}`),
    ),
    headers: credentials(app),
    extra: extraHeaders,
  });
  await fuzz(t, 15, request, async (r) => {
    const url = `${r.prefix}/${r.target}`;
    return assertAnswer(await send(app, { method: 'GET', url, headers: { ...r.extra, ...r.headers } }), `GET ${url}`);
  });
});

test('GET and DELETE /api/page/:id and /api/blog/:id', async (t) => {
  const app = await fixture(t);
  const request = fc.record({
    method: fc.constantFrom('GET', 'DELETE', 'HEAD'),
    prefix: fc.constantFrom(...PREFIXES),
    resource: fc.constantFrom('page', 'blog'),
    id: pathSegment([...app.pageIds, ...app.blogIds]),
    query: queryString(NoQuery),
    headers: credentials(app),
    extra: extraHeaders,
  });
  await fuzz(t, 10, request, async (r) => {
    const url = `${r.prefix}/${r.resource}/${r.id}${r.query}`;
    const options: InjectOptions = { method: r.method as 'GET', url, headers: { ...r.extra, ...r.headers } };
    if (r.method === 'DELETE') return write(app, options, `DELETE ${url}`);
    return assertAnswer(await send(app, options), `${r.method} ${url}`);
  });
});

/**
 * Bodies from the route's own schema. `id`, a blog's `page` and `page_parent` name real records
 * more often than chance would; the system id field (a page's `page`, a blog's `info_id`) equals
 * `id` when both are sent, as in a GET → edit → POST round trip.
 */
const sameId = (field: string) => (r: Record<string, unknown>) => (field in r && 'id' in r ? { ...r, [field]: r.id } : r);

function bodies(schema: typeof PageWrite | typeof BlogWrite, app: Fixture, key: 'page' | 'blog') {
  const idOrAny = (real: number[]) =>
    fc.oneof({ arbitrary: fc.constantFrom(...real), weight: 4 }, { arbitrary: fc.integer({ min: 1, max: 100 }), weight: 1 });
  const overrides = {
    id: idOrAny(key === 'page' ? app.pageIds : app.blogIds),
    page: idOrAny(app.pageIds),
    page_parent: fc.oneof(fc.constant(0), idOrAny(app.pageIds)),
  };
  if (key === 'blog') return schemaBody(schema, { overrides, required: ['page'], adjust: sameId('info_id') });
  return schemaBody(schema, { overrides, adjust: sameId('page') });
}

for (const resource of ['page', 'blog'] as const) {
  test(`POST /api/${resource} with JSON bodies from its schema`, async (t) => {
    const app = await fixture(t);
    const request = fc.record({
      prefix: fc.constantFrom(...PREFIXES),
      query: queryString(resource === 'blog' ? BlogWriteQuery : NoQuery),
      body: bodies(resource === 'page' ? PageWrite : BlogWrite, app, resource),
      headers: credentials(app),
      extra: extraHeaders,
    });
    await fuzz(t, 15, request, async (r) => {
      const url = `${r.prefix}/${resource}${r.query}`;
      const headers = { ...r.extra, ...r.headers, 'content-type': 'application/json' };
      return write(app, { method: 'POST', url, headers, payload: r.body }, `POST ${url} ${r.body.slice(0, 300)}`);
    });
  });
}

test('POST and PATCH /api/page and /api/blog with garbage bodies of any content type', async (t) => {
  const app = await fixture(t);
  const request = fc.record({
    method: fc.constantFrom('POST', 'POST', 'PATCH'),
    url: fc.constantFrom('/api/page', '/api/blog', '/webapps/api/blog'),
    body: garbageBody,
    encoding: fc.option(fc.constantFrom('gzip', 'identity', 'br, gzip', 'x'), { freq: 5 }),
  });
  await fuzz(t, 8, request, async (r) => {
    const headers: Record<string, string> = { ...app.site.headers };
    if (r.body.contentType !== undefined) headers['content-type'] = r.body.contentType;
    if (r.encoding) headers['content-encoding'] = r.encoding;
    // A PATCH names a record in its path: the fixture's first one of that kind, or one that is not there.
    const url = r.method === 'PATCH' ? `${r.url}/${r.url.endsWith('page') ? 1 : 999999}` : r.url;
    return write(
      app,
      { method: r.method, url, headers, payload: r.body.payload },
      `${r.method} ${url} as ${r.body.contentType}: ${r.body.payload.toString('latin1').slice(0, 200)}`,
    );
  });
});

test('POST /api/blog with multipart bodies: fields, files, broken framing', async (t) => {
  const app = await fixture(t);
  const data = fc.oneof({ arbitrary: bodies(BlogWrite, app, 'blog'), weight: 6 }, { arbitrary: hostileString, weight: 1 });
  const request = fc.record({
    prefix: fc.constantFrom(...PREFIXES),
    query: queryString(BlogWriteQuery),
    form: multipartBody(data, app.images),
  });
  await fuzz(t, 15, request, async (r) => {
    const url = `${r.prefix}/blog${r.query}`;
    const headers = { ...app.site.headers, 'content-type': r.form.contentType };
    return write(
      app,
      { method: 'POST', url, headers, payload: r.form.payload },
      `POST ${url} multipart ${r.form.payload.toString('latin1').slice(0, 400)}`,
    );
  });
});

/**
 * GET /api/changes by its own declared query schema, except `wait`: a long-poll holds its answer
 * for seconds, so only values that hold nothing are sent (0, or refused ones).
 */
test('GET /api/changes with any since, type, id and pageSize (wait 0)', async (t) => {
  const app = await fixture(t);
  const declared = app.app.references.routes.get('/api/changes')!.find((r) => r.method === 'GET')!.schema.querystring as TSchema & {
    properties: Record<string, TSchema>;
  };
  const { wait: _wait, ...properties } = declared.properties;
  // Half of the queries are well formed, so that the feed's reads run with every filter.
  const seq = fc.nat({ max: 40 }).map((n) => Buffer.from(JSON.stringify(['c', n])).toString('base64url'));
  const wellFormed = fc
    .record(
      {
        since: seq,
        type: fc.constantFrom('page', 'blog'),
        id: fc.constantFrom(...app.pageIds, ...app.blogIds, ...app.deletedPageIds, 2147483647),
        pageSize: fc.integer({ min: 1, max: 999 }),
      },
      { requiredKeys: [] },
    )
    .map((q) => {
      const pairs = Object.entries(q).map(([name, value]) => `${name}=${value}`);
      return pairs.length > 0 ? `?${pairs.join('&')}` : '';
    });
  const request = fc.record({
    prefix: fc.constantFrom(...PREFIXES),
    query: fc.oneof(queryString({ ...declared, properties } as TSchema), wellFormed),
    wait: fc.option(fc.constantFrom('0', '0', '0', '00', '-0', '', '-1', '31', '0.5', 'x', '99999999999', '%00'), { freq: 3 }),
    headers: credentials(app),
    extra: extraHeaders,
  });
  await fuzz(t, 7, request, async (r) => {
    const wait = r.wait === null ? '' : `${r.query ? '&' : '?'}wait=${r.wait}`;
    const url = `${r.prefix}/changes${r.query}${wait}`;
    const response = await send(app, { method: 'GET', url, headers: { ...r.extra, ...r.headers } });
    const status = assertAnswer(response, `GET ${url}`);
    if (status === 200 && String(response.headers['content-type']).startsWith('application/json')) {
      // A cursor the feed gave out is one it takes back.
      const next = `${r.prefix}/changes?since=${json(response).meta.nextCursor}`;
      assert.equal(assertAnswer(await send(app, { method: 'GET', url: next, headers: app.site.headers }), `GET ${next}`), 200, next);
    }
    return status;
  });
});

test('revisions of pages and blogs: list, read and restore, with any id and revision number', async (t) => {
  const app = await fixture(t);
  const request = fc.record({
    resource: fc.constantFrom('page', 'blog'),
    prefix: fc.constantFrom(...PREFIXES),
    // Real ids and revision numbers most of the time, so that restores run; a query string now and then.
    id: fc.oneof({ arbitrary: fc.constantFrom(...app.pageIds, ...app.blogIds, ...app.deletedPageIds), weight: 3 }, pathSegment([999999])),
    action: fc.constantFrom('list', 'get', 'get', 'restore', 'restore', 'head'),
    revision: fc.oneof({ arbitrary: fc.constantFrom('1', '2', '3'), weight: 3 }, pathSegment([4])),
    query: fc.oneof({ arbitrary: fc.constant(''), weight: 4 }, queryString(NoQuery)),
    body: fc.option(fc.constantFrom('{}', '[]', '{"id":1}', 'x'), { freq: 3 }),
    headers: credentials(app),
    extra: extraHeaders,
  });
  await fuzz(t, 8, request, async (r) => {
    const base = `${r.prefix}/${r.resource}/${r.id}/revisions`;
    const headers = { ...r.extra, ...r.headers };
    if (r.action === 'restore') {
      const url = `${base}/${r.revision}/restore${r.query}`;
      const body = r.body === null ? {} : { payload: r.body, headers: { ...headers, 'content-type': 'application/json' } };
      return write(app, { method: 'POST', url, headers, ...body }, `POST ${url} ${r.body ?? ''}`);
    }
    const url = r.action === 'list' ? `${base}${r.query}` : `${base}/${r.revision}${r.query}`;
    const method = r.action === 'head' ? 'HEAD' : 'GET';
    return assertAnswer(await send(app, { method, url, headers }), `${method} ${url}`);
  });
});

test('references, /images/:name and unknown addresses, with any method and Accept', async (t) => {
  const app = await fixture(t);
  const path = fc.oneof(
    fc.constantFrom(
      '/api/page',
      '/api/blog',
      '/api/changes',
      '/webapps/api/page',
      '/api/openapi.json',
      '/docs',
      '/docs/json',
      '/healthz',
      '/readyz',
      '/.well-known/oauth-protected-resource',
    ),
    pathSegment(app.pageIds).map((id) => `/api/page/${id}`),
    pathSegment(app.imageNames).map((name) => `/images/${name}`),
    // The OAuth endpoints answer RFC 6749 errors: the last property covers them.
    fc
      .webPath()
      .map((p) => p || '/')
      .filter((p) => !p.startsWith('/api/auth')),
  );
  const request = fc.record({
    method: fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE'),
    path,
    query: queryString(NoQuery),
    accept: fc.option(
      fc.oneof(fc.constantFrom('text/markdown', 'text/markdown;q=0.9, application/json;q=1', 'text/markdown;q=abc', 'text/*'), headerText),
    ),
    headers: fc.oneof(fc.constant({}), credentials(app)),
  });
  await fuzz(t, 7, request, async (r) => {
    const url = `${r.path}${r.query}`;
    const headers = r.accept === null ? r.headers : { ...r.headers, accept: r.accept };
    return assertAnswer(await send(app, { method: r.method as 'GET', url, headers }), `${r.method} ${url} accept ${r.accept}`);
  });
});
