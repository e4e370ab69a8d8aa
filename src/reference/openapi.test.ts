import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { RouteOptions } from 'fastify';
import { buildBlogApp, image, postForm } from '../../test/blog-fixtures.js';
import { buildTestApp, json } from '../../test/helpers.js';
import { IdParams } from '../content/shared/schemas.js';
import { documentRoute } from './openapi.document.js';
import { problemStatuses } from './problems.openapi.js';

// biome-ignore lint/suspicious/noExplicitAny: the document is arbitrary JSON
type Doc = any;

const PACKAGE = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

async function openapi(t: Parameters<typeof buildTestApp>[0], config: Parameters<typeof buildTestApp>[1] = {}): Promise<Doc> {
  const { app } = await buildTestApp(t, config);
  const response = await app.inject({ url: '/api/openapi.json' });
  assert.equal(response.statusCode, 200, 'public: no credentials needed');
  return json(response);
}

function operations(doc: Doc): [string, string, Doc][] {
  return Object.entries(doc.paths as Record<string, Doc>).flatMap(([path, item]) =>
    Object.entries(item as Record<string, Doc>)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]): [string, string, Doc] => [path, method, operation]),
  );
}

/** Every local `$ref` in the document, with the JSON pointer it names. */
function refs(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) refs(item, found);
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push(value);
      else refs(value, found);
    }
  }
  return found;
}

function resolve(doc: Doc, ref: string): unknown {
  assert.ok(ref.startsWith('#/'), `${ref} is local`);
  return ref
    .slice(2)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((node: Doc, part) => node?.[part], doc);
}

function problemStatusesOf(operation: Doc): number[] {
  return Object.entries(operation.responses as Record<string, Doc>)
    .filter(([, response]) => response.content?.['application/problem+json'])
    .map(([status]) => Number(status));
}

test('the OpenAPI version is package.json’s', async (t) => {
  const doc = await openapi(t);
  assert.equal(doc.info.version, PACKAGE.version);
});

test('the document is structurally OpenAPI 3.1: every $ref resolves, every operation has responses and its path parameters', async (t) => {
  const doc = await openapi(t);
  assert.equal(doc.openapi, '3.1.0');
  assert.ok(doc.info.title);
  const all = refs(doc);
  assert.ok(all.length > 0);
  for (const ref of all) assert.ok(resolve(doc, ref), `${ref} resolves`);
  for (const [path, method, operation] of operations(doc)) {
    const where = `${method.toUpperCase()} ${path}`;
    assert.ok(path.startsWith('/'), where);
    assert.ok(Object.keys(operation.responses ?? {}).length > 0, `${where} has responses`);
    for (const [status, response] of Object.entries(operation.responses as Record<string, Doc>)) {
      assert.match(status, /^[1-5]\d\d$/, where);
      assert.equal(typeof response.description, 'string', `${where} ${status} has a description`);
    }
    for (const tag of operation.tags ?? [])
      assert.ok(
        doc.tags.some((t: Doc) => t.name === tag),
        `${where}: tag ${tag} is declared`,
      );
    const declared = (operation.parameters ?? []).filter((p: Doc) => p.in === 'path').map((p: Doc) => p.name);
    const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    assert.deepEqual(declared.sort(), templated.sort(), `${where} declares its path parameters`);
  }
});

test('each operation lists the problems it can answer, with the shared Problem schema', async (t) => {
  const doc = await openapi(t);
  const problem = doc.components.schemas.Problem;
  for (const field of ['type', 'title', 'status', 'detail', 'instance']) assert.ok(problem.required.includes(field), field);
  assert.deepEqual(Object.keys(problem.properties.errors.items.properties), ['field', 'message']);

  const get = doc.paths['/api/page/{id}'].get;
  assert.deepEqual(problemStatusesOf(get), [400, 401, 403, 404, 414, 429, 503]);
  assert.deepEqual(get.responses['404'].content['application/problem+json'].schema, { $ref: '#/components/schemas/Problem' });
  assert.deepEqual(problemStatusesOf(doc.paths['/api/page'].get), [400, 401, 403, 429, 503]);
  assert.deepEqual(problemStatusesOf(doc.paths['/api/page'].post), [400, 401, 403, 404, 409, 412, 413, 415, 429, 503]);
  assert.deepEqual(problemStatusesOf(doc.paths['/api/blog/{id}'].delete), [400, 401, 403, 404, 412, 414, 429, 503]);
  // A page with sub pages or blogs cannot be deleted: the route declares the 409 its shape does not imply.
  assert.deepEqual(problemStatusesOf(doc.paths['/api/page/{id}'].delete), [400, 401, 403, 404, 409, 412, 414, 429, 503]);
  // Only a route that evaluates If-Match and If-None-Match can answer 412.
  assert.deepEqual(
    problemStatusesOf(doc.paths['/api/webhooks/{id}/rotate-secret'].post),
    [400, 401, 403, 404, 409, 413, 414, 415, 429, 503],
  );
  assert.match(doc.paths['/api/page'].post.responses['412'].description, /If-Match/);
  assert.ok(doc.paths['/api/page'].post.responses['201'].content['application/json'], 'success bodies stay as the route declares them');
  for (const [path, method, operation] of operations(doc).filter(([path]) => path.startsWith('/api/') && !path.startsWith('/api/auth'))) {
    assert.ok(problemStatusesOf(operation).includes(401), `${method} ${path} documents 401`);
  }
});

test('PATCH lists the problems it answers: a taken alias, a stale If-Match, a body too large or of another type', async (t) => {
  const { app, site } = await buildTestApp(t);
  const [first, second] = await Promise.all(
    ['First', 'Second'].map(async (title) => {
      const created = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: title } });
      return json(created).data[0];
    }),
  );
  const url = `/api/page/${second.page}`;
  const answered = [
    await app.inject({ method: 'PATCH', url, headers: site.headers, payload: { page_alias: first.page_alias } }),
    await app.inject({ method: 'PATCH', url, headers: { ...site.headers, 'if-match': '"stale"' }, payload: {} }),
    await app.inject({
      method: 'PATCH',
      url,
      headers: { ...site.headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ page_html_content: 'x'.repeat(6 * 1024 * 1024) }),
    }),
    await app.inject({ method: 'PATCH', url, headers: { ...site.headers, 'content-type': 'text/plain' }, payload: 'text' }),
  ].map((response) => response.statusCode);
  assert.deepEqual(answered, [409, 412, 413, 415]);
  const listed = problemStatusesOf((await openapi(t)).paths['/api/page/{id}'].patch);
  for (const status of answered) assert.ok(listed.includes(status), `PATCH /api/page/{id} lists ${status}: ${listed}`);
});

test('problems are documentation only: the route keeps its own response schemas, and config.problems adds statuses', () => {
  const schema = { params: IdParams, response: { 204: { type: 'null' } } };
  const route = {
    method: 'DELETE',
    url: '/api/page/:id',
    schema,
    config: { scope: 'everything:write', problems: [409], conditional: true },
  } as unknown as RouteOptions;
  const documented = documentRoute({ schema, url: route.url, route, openapiObject: {} });
  assert.deepEqual(Object.keys(schema.response), ['204'], 'the route schema Fastify serializes with is untouched');
  assert.deepEqual(Object.keys(documented.schema.response as object), [
    '204',
    '400',
    '401',
    '403',
    '404',
    '409',
    '412',
    '414',
    '429',
    '503',
  ]);
  const image = { method: 'GET', url: '/images/:name', schema: {}, config: {} } as unknown as RouteOptions;
  assert.deepEqual(problemStatuses(image), [404, 414], 'any path parameter can name nothing, or be too long');
});

test('every GET of the document lists 304 when, and only when, it answers 200 with an ETag, and answers 304 to that ETag', async (t) => {
  const a = await buildBlogApp(t);
  const posted = await postForm(a, [
    ['data', JSON.stringify({ page: a.pageId, info_title: 'With an image' })],
    ['uploadPrimaryImage', { file: await image('png'), filename: 'photo.png', type: 'image/png' }],
  ]);
  assert.equal(posted.statusCode, 201, posted.body);
  const blog = json(posted).data[0];
  const hook = await a.db.kysely
    .insertInto('webhooks')
    .values({
      site_id: a.site.siteId,
      url: 'https://hooks.example/',
      events: '*',
      secret: 'whsec_AAAA',
      disabled_reason: null,
      created_at: '2026-01-01 00:00:00',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const doc = json(await a.app.inject({ url: '/api/openapi.json' }));
  const values: Record<string, Record<string, string>> = {
    webhooks: { id: String(hook.id) },
    page: { id: String(a.pageId), revision: '1' },
    blog: { id: String(blog.info_id), revision: '1' },
    images: { name: String(blog.info_img).replace('/images/', '') },
  };
  // The authorization page answers 200 only at the end of a browser's sign-in (response_mode=form_post).
  const gets = operations(doc).filter(
    ([path, method, operation]) => method === 'get' && operation.responses['200'] && path !== '/api/auth/authorize',
  );
  for (const [path, , operation] of gets) {
    const of = values[path.split('/')[path.startsWith('/api/') ? 2 : 1]!] ?? {};
    const url = path.replace(/\{(\w+)\}/g, (_, name: string) => of[name] ?? assert.fail(`a value for ${name} in ${path}`));
    const first = await a.app.inject({ url, headers: a.site.headers });
    assert.equal(first.statusCode, 200, `${path}: ${first.body}`);
    const etag = first.headers.etag;
    assert.equal('304' in operation.responses, etag !== undefined, `GET ${path} lists 304 if and only if it sends an ETag (${etag})`);
    if (etag === undefined) continue;
    const again = await a.app.inject({ url, headers: { ...a.site.headers, 'if-none-match': String(etag) } });
    assert.equal(again.statusCode, 304, path);
  }
  const listed = gets.filter(([, , operation]) => '304' in operation.responses).map(([path]) => path);
  for (const path of ['/api/page', '/api/page/{id}', '/api/blog', '/api/blog/{id}', '/images/{name}']) {
    assert.ok(listed.includes(path), `GET ${path} lists 304`);
  }
  assert.equal(doc.paths['/images/{name}'].get.responses['200'].description, 'An uploaded image', 'the image itself');
});

test('/api/auth/reg lists the 413 it answers to a body over 64 KiB', async (t) => {
  const { app } = await buildTestApp(t);
  const doc = json(await app.inject({ url: '/api/openapi.json' }));
  const documented = doc.paths['/api/auth/reg'].post.responses['413'];
  assert.deepEqual(documented.content['application/problem+json'].schema, { $ref: '#/components/schemas/Problem' });
  const big = { redirect_uris: ['https://app.example/callback'], client_name: 'x'.repeat(65 * 1024) };
  const response = await app.inject({ method: 'POST', url: '/api/auth/reg', payload: big });
  assert.equal(response.statusCode, 413);
  assert.equal(json(response).type, '/problems/payload-too-large');
});

test('/webapps/api/… serves the page and blog endpoints and their Markdown references, and nothing else the document lists', async (t) => {
  const { app, site } = await buildTestApp(t);
  const doc = json(await app.inject({ url: '/api/openapi.json' }));
  assert.match(doc.info.description, /page and blog endpoints .* also served under \/webapps\/api/);
  const twinned = (path: string) => /^\/api\/(page|blog|changes)(\/|$)/.test(path);
  const paths = [...operations(doc), ['/api/openapi.json', 'get', {}] as [string, string, Doc]];
  assert.ok(paths.filter(([path]) => twinned(path)).length >= 8);
  for (const [path, method] of paths) {
    const url = `/webapps${path.replace(/\{\w+\}/g, '1')}`;
    const response = await app.inject({ method: method.toUpperCase() as 'GET', url, headers: site.headers, payload: {} });
    const unrouted = response.statusCode === 404 && String(json(response).detail).startsWith('No route for');
    assert.equal(unrouted, !twinned(path), `${method.toUpperCase()} ${url}: ${response.statusCode} ${response.body}`);
  }
  for (const endpoint of ['/webapps/api/page', '/webapps/api/blog/1']) {
    const reference = await app.inject({ url: endpoint, headers: { accept: 'text/markdown' } });
    assert.equal(reference.statusCode, 200, endpoint);
    assert.match(reference.body, /^# \/api\/(page|blog)/);
    assert.match(reference.body, /Also served, identically, at \/webapps\/api\/(page|blog)/);
  }
  // An endpoint with no alias does not claim one, in Markdown or JSON.
  const markdown = await app.inject({ url: '/api/webhooks', headers: { accept: 'text/markdown' } });
  assert.equal(markdown.statusCode, 200);
  assert.doesNotMatch(markdown.body, /webapps/);
  const unauthorized = json(await app.inject({ url: '/api/webhooks', headers: { accept: 'application/json' } }));
  assert.equal(unauthorized.status, 401);
  assert.equal(unauthorized.reference.endpoint, '/api/webhooks');
  assert.equal(unauthorized.reference.alias, undefined);
});

test('the OAuth endpoints are described, registration only when it is on', async (t) => {
  const doc = await openapi(t);
  const expected: [string, string][] = [
    ['/api/auth/authorize', 'get'],
    ['/api/auth/token', 'post'],
    ['/api/auth/revoke', 'post'],
    ['/api/auth/reg', 'post'],
    ['/.well-known/oauth-authorization-server/api/auth', 'get'],
    ['/api/auth/.well-known/oauth-authorization-server', 'get'],
    ['/.well-known/oauth-protected-resource', 'get'],
  ];
  for (const [path, method] of expected) assert.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path}`);

  const token = doc.paths['/api/auth/token'].post;
  assert.ok(token.requestBody.content['application/x-www-form-urlencoded']);
  const [code, refresh] = doc.components.schemas.TokenRequest.anyOf;
  assert.ok(code.required.includes('code_verifier'));
  assert.deepEqual(refresh.properties.grant_type.enum, ['refresh_token']);
  const tokens = resolve(doc, token.responses['200'].content['application/json'].schema.$ref) as Doc;
  assert.deepEqual(Object.keys(tokens.properties), [
    'access_token',
    'token_type',
    'expires_in',
    'refresh_token',
    'refresh_token_expires_in',
    'scope',
  ]);
  const error = resolve(doc, token.responses['400'].content['application/json'].schema.$ref) as Doc;
  assert.deepEqual(Object.keys(error.properties), ['error', 'error_description']);
  const parameters = doc.paths['/api/auth/authorize'].get.parameters.map((p: Doc) => p.name);
  for (const name of [
    'response_type',
    'client_id',
    'redirect_uri',
    'scope',
    'state',
    'code_challenge',
    'code_challenge_method',
    'resource',
  ]) {
    assert.ok(parameters.includes(name), name);
  }
  assert.match(doc.paths['/api/auth/authorize'].get.parameters.find((p: Doc) => p.name === 'scope').description, /order:write/);

  const closed = await openapi(t, { config: { oauth: { dynamicRegistration: false, clientMetadataDocuments: true } } });
  assert.equal(closed.paths['/api/auth/reg'], undefined);
  assert.ok(closed.paths['/api/auth/token'].post);
});
