import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json } from '../../test/helpers.js';

// What client generators (openapi-typescript, orval, @hey-api/openapi-ts) need of the document, held
// over the whole document, so that a new route cannot leave them behind.

// biome-ignore lint/suspicious/noExplicitAny: the document is arbitrary JSON
type Doc = any;

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

async function openapi(t: Parameters<typeof buildTestApp>[0]): Promise<Doc> {
  const { app } = await buildTestApp(t);
  return json(await app.inject({ url: '/api/openapi.json' }));
}

function operations(doc: Doc): [string, string, Doc][] {
  return Object.entries(doc.paths as Record<string, Doc>).flatMap(([path, item]) =>
    Object.entries(item as Record<string, Doc>)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]): [string, string, Doc] => [path, method, operation]),
  );
}

/** Every schema object in `node`, with where it is. */
function schemasIn(node: unknown, where: string, found: [string, Doc][] = []): [string, Doc][] {
  if (Array.isArray(node)) {
    for (const [i, item] of node.entries()) schemasIn(item, `${where}/${i}`, found);
  } else if (node && typeof node === 'object') {
    const object = node as Doc;
    if (typeof object.type === 'string' || Array.isArray(object.type)) found.push([where, object]);
    for (const [key, value] of Object.entries(object)) schemasIn(value, `${where}/${key}`, found);
  }
  return found;
}

/**
 * The operationIds, by method and path. They become the method names of every generated client,
 * so renaming one breaks its users: change this table only with a major version.
 */
const OPERATION_IDS: Record<string, string> = {
  'GET /api/page': 'listPages',
  'POST /api/page': 'createPage',
  'GET /api/page/{id}': 'getPage',
  'PATCH /api/page/{id}': 'updatePage',
  'DELETE /api/page/{id}': 'deletePage',
  'GET /api/page/{id}/revisions': 'listPageRevisions',
  'GET /api/page/{id}/revisions/{revision}': 'getPageRevision',
  'POST /api/page/{id}/revisions/{revision}/restore': 'restorePageRevision',
  'GET /api/blog': 'listBlogs',
  'POST /api/blog': 'createBlog',
  'GET /api/blog/{id}': 'getBlog',
  'PATCH /api/blog/{id}': 'updateBlog',
  'DELETE /api/blog/{id}': 'deleteBlog',
  'GET /api/blog/{id}/revisions': 'listBlogRevisions',
  'GET /api/blog/{id}/revisions/{revision}': 'getBlogRevision',
  'POST /api/blog/{id}/revisions/{revision}/restore': 'restoreBlogRevision',
  'GET /api/changes': 'listChanges',
  'POST /api/webhooks': 'createWebhook',
  'GET /api/webhooks': 'listWebhooks',
  'GET /api/webhooks/{id}': 'getWebhook',
  'PATCH /api/webhooks/{id}': 'updateWebhook',
  'DELETE /api/webhooks/{id}': 'deleteWebhook',
  'POST /api/webhooks/{id}/rotate-secret': 'rotateWebhookSecret',
  'GET /api/webhooks/{id}/deliveries': 'listWebhookDeliveries',
  'POST /api/webhooks/{id}/deliveries/{delivery}/retry': 'retryWebhookDelivery',
  'POST /api/webhooks/{id}/test': 'testWebhook',
  'GET /images/{name}': 'getImage',
  'GET /api/auth/authorize': 'authorize',
  'POST /api/auth/token': 'token',
  'POST /api/auth/revoke': 'revoke',
  'POST /api/auth/reg': 'registerClient',
  'GET /.well-known/oauth-authorization-server/api/auth': 'getAuthorizationServerMetadata',
  'GET /api/auth/.well-known/oauth-authorization-server': 'getIssuerAuthorizationServerMetadata',
  'GET /.well-known/oauth-protected-resource': 'getProtectedResourceMetadata',
};

test('every operation has its stable operationId and the tag of its resource', async (t) => {
  const doc = await openapi(t);
  const found = Object.fromEntries(
    operations(doc).map(([path, method, operation]) => [`${method.toUpperCase()} ${path}`, operation.operationId]),
  );
  assert.deepEqual(found, OPERATION_IDS);
  const declaredTags = new Set(doc.tags.map((tag: Doc) => tag.name));
  for (const [path, method, operation] of operations(doc)) {
    assert.equal(operation.tags?.length, 1, `${method} ${path} has one tag`);
    assert.ok(declaredTags.has(operation.tags[0]), `${method} ${path}: ${operation.tags[0]} is declared`);
  }
  assert.equal(doc.paths['/api/page/{id}/revisions'].get.tags[0], 'pages', 'revisions go with their resource');
  assert.ok(
    Object.keys(doc.paths).every((path) => !path.startsWith('/webapps')),
    'the /webapps aliases are not operations of their own',
  );
});

test('every body a client sends or receives is a named component; no def-N names', async (t) => {
  const doc = await openapi(t);
  const names = Object.keys(doc.components.schemas);
  assert.deepEqual(
    names.filter((name) => /^def-\d+$/.test(name)),
    [],
  );
  for (const name of ['Page', 'PageInput', 'PageList', 'PageListItem', 'Blog', 'BlogInput', 'BlogForm', 'BlogList', 'Problem']) {
    assert.ok(names.includes(name), name);
  }
  for (const name of ['Change', 'ChangeList', 'Revision', 'RevisionList', 'Webhook', 'WebhookList', 'WebhookDelivery', 'ListMeta']) {
    assert.ok(names.includes(name), name);
  }
  for (const [path, method, operation] of operations(doc)) {
    const bodies: [string, Doc][] = [
      ...Object.entries(operation.requestBody?.content ?? {}).map(([type, media]): [string, Doc] => [`request ${type}`, media]),
      ...Object.entries(operation.responses as Record<string, Doc>).flatMap(([status, response]) =>
        Object.entries(response.content ?? {}).map(([type, media]): [string, Doc] => [`${status} ${type}`, media]),
      ),
    ];
    for (const [where, media] of bodies) {
      if (where.endsWith('text/html') || !media.schema) continue;
      assert.match(String(media.schema.$ref), /^#\/components\/schemas\/[A-Z]\w+$/, `${method} ${path} ${where} is a named component`);
    }
  }
  assert.deepEqual(doc.paths['/api/page'].get.responses['200'].content['application/json'].schema, {
    $ref: '#/components/schemas/PageList',
  });
  assert.deepEqual(doc.components.schemas.PageList.properties.data.items, { $ref: '#/components/schemas/PageListItem' });
});

test('public operations say security: []; the others name every scheme with the scope they need', async (t) => {
  const doc = await openapi(t);
  for (const [path, method, operation] of operations(doc)) {
    assert.ok(Array.isArray(operation.security), `${method} ${path} declares security`);
    const isPublic = !path.startsWith('/api/') || path.startsWith('/api/auth');
    if (isPublic) {
      assert.deepEqual(operation.security, [], `${method} ${path} is public`);
      continue;
    }
    // The narrow scope the route declares, then every broader one that carries it: any one suffices.
    const area = path.startsWith('/api/webhooks')
      ? 'webhooks'
      : /^\/api\/changes|\/revisions/.test(path)
        ? 'history'
        : path.startsWith('/api/blog')
          ? 'blogs'
          : 'pages';
    const reads = method === 'get' && area !== 'webhooks';
    const scopes = {
      pages: reads ? ['pages:read', 'pages:write', 'everything:read', 'everything:write'] : ['pages:write', 'everything:write'],
      blogs: reads ? ['blogs:read', 'blogs:write', 'everything:read', 'everything:write'] : ['blogs:write', 'everything:write'],
      history: reads ? ['history:read', 'history:restore', 'everything:read', 'everything:write'] : ['history:restore', 'everything:write'],
      webhooks: ['webhooks:manage', 'everything:write'],
    }[area];
    assert.deepEqual(
      operation.security,
      [...scopes.map((scope) => ({ oauth2: [scope] })), { apiKeyBasic: [] }, { apiId: [], apiKey: [] }],
      `${method} ${path}`,
    );
  }
  const offered = doc.components.securitySchemes.oauth2.flows.authorizationCode.scopes;
  assert.deepEqual(Object.keys(offered), [
    'everything:read',
    'everything:write',
    'pages:read',
    'pages:write',
    'blogs:read',
    'blogs:write',
    'history:read',
    'history:restore',
    'webhooks:manage',
  ]);
  assert.equal(offered['pages:read'], 'Read your website’s pages');
});

test('conditional requests and their answers are declared: If-Match, If-None-Match, ETag, 304 and 412', async (t) => {
  const doc = await openapi(t);
  const parameters = (operation: Doc) => (operation.parameters ?? []).map((p: Doc) => p.$ref ?? `${p.in}:${p.name}`);
  assert.equal(doc.components.parameters.IfMatch.name, 'If-Match');
  assert.equal(doc.components.parameters.IfMatch.in, 'header');
  const conditional = [
    ['/api/page', 'post'],
    ['/api/page/{id}', 'patch'],
    ['/api/page/{id}', 'delete'],
    ['/api/blog', 'post'],
    ['/api/blog/{id}', 'patch'],
    ['/api/blog/{id}', 'delete'],
    ['/api/page/{id}/revisions/{revision}/restore', 'post'],
    ['/api/blog/{id}/revisions/{revision}/restore', 'post'],
    ['/api/webhooks/{id}', 'patch'],
    ['/api/webhooks/{id}', 'delete'],
  ];
  for (const [path, method, operation] of operations(doc)) {
    const where = `${method} ${path}`;
    const honours = conditional.some(([p, m]) => p === path && m === method);
    assert.equal(parameters(operation).includes('#/components/parameters/IfMatch'), honours, `${where}: If-Match`);
    assert.equal('412' in operation.responses, honours, `${where}: 412`);
    for (const [status, response] of Object.entries(operation.responses as Record<string, Doc>)) {
      if (status.startsWith('2') && method !== 'delete' && honours) assert.ok(response.headers?.ETag, `${where} ${status}: ETag`);
    }
    if ('304' in operation.responses) {
      assert.ok(parameters(operation).includes('#/components/parameters/IfNoneMatch'), `${where}: If-None-Match`);
      assert.ok(operation.responses['200'].headers.ETag, `${where} 200: ETag`);
      assert.ok(operation.responses['304'].headers.ETag, `${where} 304: ETag`);
    }
  }
});

test('Location, RateLimit and Retry-After are declared where they are sent; 429 and 503 where they can happen', async (t) => {
  const doc = await openapi(t);
  for (const [path, method, operation] of operations(doc)) {
    const where = `${method} ${path}`;
    const responses = operation.responses as Record<string, Doc>;
    if (responses['201']) assert.deepEqual(responses['201'].headers.Location, { $ref: '#/components/headers/Location' }, where);
    for (const status of ['429', '503']) {
      if (responses[status])
        assert.deepEqual(responses[status].headers['Retry-After'], { $ref: '#/components/headers/Retry-After' }, where);
    }
    if (operation.security.length > 0) {
      for (const status of ['429', '503']) assert.ok(responses[status], `${where} lists ${status}`);
      for (const [status, response] of Object.entries(responses)) {
        if (status === '401' || status === '304') continue;
        assert.ok(response.headers?.RateLimit && response.headers['RateLimit-Policy'], `${where} ${status}: RateLimit`);
      }
    }
  }
  assert.ok(doc.paths['/api/auth/token'].post.responses['200'].headers.RateLimit, 'the token endpoint counts every request');
  assert.ok(doc.paths['/images/{name}'].get.responses['429'], 'new image variants are rate limited');
});

test('request bodies offer JSON, and multipart only for a blog with its images; the legacy forms still work', async (t) => {
  const { app, site } = await buildTestApp(t);
  const doc = json(await app.inject({ url: '/api/openapi.json' }));
  for (const [path, method, operation] of operations(doc)) {
    if (!operation.requestBody) continue;
    const types = Object.keys(operation.requestBody.content);
    const expected =
      path === '/api/blog' && method === 'post'
        ? ['application/json', 'multipart/form-data']
        : path === '/api/auth/token' || path === '/api/auth/revoke'
          ? ['application/x-www-form-urlencoded'] // RFC 6749 and 7009 say so
          : ['application/json'];
    assert.deepEqual(types, expected, `${method} ${path}`);
  }
  const form = doc.components.schemas.BlogForm.properties;
  assert.equal(form.apiID, undefined, 'credentials go in headers');
  assert.equal(form.uploadAdditionalImage.items.format, 'binary');

  // Not offered, still served: the hosted original's urlencoded form with the record as `data`.
  const posted = await app.inject({
    method: 'POST',
    url: '/webapps/api/page',
    headers: { ...site.headers, 'content-type': 'application/x-www-form-urlencoded' },
    payload: `data=${encodeURIComponent(JSON.stringify({ page_usertitle: 'From a form' }))}`,
  });
  assert.equal(posted.statusCode, 201, posted.body);
  const asTextJson = await app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { ...site.headers, 'content-type': 'text/json' },
    payload: JSON.stringify({ page_usertitle: 'As text/json' }),
  });
  assert.equal(asTextJson.statusCode, 201, asTextJson.body);
});

test('every string and integer of the document carries its limits', async (t) => {
  const doc = await openapi(t);
  for (const [where, schema] of schemasIn(doc, '#')) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (types.includes('string') && schema.enum === undefined && schema.const === undefined) {
      assert.equal(typeof schema.maxLength, 'number', `${where}: maxLength`);
    }
    if (types.includes('integer')) {
      assert.equal(typeof schema.minimum, 'number', `${where}: minimum`);
      assert.equal(typeof schema.maximum, 'number', `${where}: maximum`);
      assert.ok(['int32', 'int64'].includes(schema.format), `${where}: format`);
    }
  }
  // The limits the service enforces, as it enforces them.
  const query = (name: string) => doc.paths['/api/page'].get.parameters.find((p: Doc) => p.name === name).schema;
  assert.equal(query('title').maxLength, 1000);
  assert.equal(query('offset').minimum, 0);
  assert.equal(doc.components.schemas.PageInput.properties.page_alias.maxLength, 200);
  assert.equal(doc.components.schemas.PageInput.properties.page_alias.pattern, '^[^/?#\\s]*$');
  assert.equal(doc.components.schemas.PageInput.properties.page_usertitle.maxLength, 5 * 1024 * 1024, 'the body limit');
  assert.equal(doc.components.schemas.PageList.properties.data.maxItems, 999);
});
