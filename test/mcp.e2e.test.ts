import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { listConnections } from '../src/oauth/connections/connection.service.js';
import { form, image } from './blog-fixtures.js';
import { json } from './helpers.js';
import { type Agent, connectAgent, postToolCall } from './mcp.helpers.js';
import { authorizeUrl, connect, type OAuthProcess, pkcePair, revokeInConsole, startOAuthProcess } from './oauth.helpers.js';

// Issue 12: each test runs against a real server process (dist/src/server.js, configured by its
// environment only, as `npm start` runs it) on a SQLite file, or on a PostgreSQL database of its
// own with TEST_DATABASE_URL. The test reaches it over HTTP only, with the SDK's client, its OAuth
// helpers and the owner's console, and opens the database for set-up and direct checks.
// test/mcp.cimd.test.ts stays in the test process: it needs oauth.clientMetadataFetch, a test-only
// setting that no environment variable sets.

const TOOLS = [
  'list_pages',
  'get_page',
  'save_page',
  'delete_page',
  'list_blogs',
  'get_blog',
  'save_blog',
  'delete_blog',
  'list_changes',
  'list_revisions',
  'restore_revision',
];

/** The scopes the MCP resource offers, as its metadata lists them: what the SDK client asks for. */
const MCP_SCOPES = [
  'everything:read',
  'everything:write',
  'pages:read',
  'pages:write',
  'blogs:read',
  'blogs:write',
  'history:read',
  'history:restore',
];

type Result = CallToolResult & {
  structuredContent?: { data?: Array<Record<string, unknown>>; meta?: Record<string, number | string | null> };
};

async function call(agent: Agent, name: string, args: Record<string, unknown>): Promise<Result> {
  return (await agent.client.callTool({ name, arguments: args })) as Result;
}

/** A call that must succeed: its structured content. */
async function ok(agent: Agent, name: string, args: Record<string, unknown>) {
  const result = await call(agent, name, args);
  assert.notEqual(result.isError, true, `${name} ${JSON.stringify(args)}: ${JSON.stringify(result.content)}`);
  assert.ok(result.structuredContent, `${name} returns structured content`);
  return result.structuredContent;
}

/** A call that must be a tool error: the problem document it carries. */
async function refused(agent: Agent, name: string, args: Record<string, unknown>) {
  const result = await call(agent, name, args);
  assert.equal(result.isError, true, `${name} ${JSON.stringify(args)} should fail`);
  const text = result.content[0]?.type === 'text' ? result.content[0].text : '';
  return JSON.parse(text) as { status: number; detail: string; errors?: Array<{ field: string }> };
}

/** The fields a problem names, each once (a union field may fail in several branches). */
const fields = (problem: { errors?: Array<{ field: string }> }) => [...new Set((problem.errors ?? []).map((e) => e.field))];

/** POST /api/page with the site's API key, over HTTP: the page's status and JSON answer. */
async function postPage(a: OAuthProcess, headers: Record<string, string>, page: Record<string, unknown>) {
  const response = await fetch(`${a.base}/api/page`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(page),
  });
  return { statusCode: response.status, body: await response.text() };
}

function accessToken(agent: Agent): string {
  const token = agent.auth.tokens()?.access_token;
  assert.ok(token);
  return token;
}

test('MCP discovery: 401 names the resource metadata, which names the MCP resource and the one authorization server', async (t) => {
  const a = await startOAuthProcess(t);
  const unauthorized = await fetch(`${a.base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
  });
  assert.equal(unauthorized.status, 401);
  const challenge = String(unauthorized.headers.get('www-authenticate'));
  assert.match(challenge, /^Bearer /);
  assert.ok(challenge.includes(`resource_metadata="${a.base}/.well-known/oauth-protected-resource/mcp"`), challenge);
  assert.doesNotMatch(challenge, /Basic/, 'API keys are not taken at /mcp');

  const metadata = json({ body: await (await fetch(`${a.base}/.well-known/oauth-protected-resource/mcp`)).text() });
  assert.equal(metadata.resource, `${a.base}/mcp`);
  assert.deepEqual(metadata.authorization_servers, [a.issuer]);
  assert.deepEqual(metadata.scopes_supported, MCP_SCOPES);
  const rest = json({ body: await (await fetch(`${a.base}/.well-known/oauth-protected-resource`)).text() });
  assert.equal(rest.resource, a.base, 'the REST API keeps its own resource');

  // An API key is no credential for the MCP server.
  const withKey = await fetch(`${a.base}/mcp`, {
    method: 'POST',
    headers: { ...a.site.headers, 'content-type': 'application/json' },
    body: '{}',
  });
  assert.equal(withKey.status, 401);
});

test('MCP with the SDK client: the owner picks a website and approves pages:read only; only the page reading tools are listed, and a write is a tool error', async (t) => {
  const a = await startOAuthProcess(t);
  const seeded = await postPage(a, a.site2.headers, { page_usertitle: 'Site 2 home' });
  assert.equal(seeded.statusCode, 201, seeded.body);
  assert.equal((await postPage(a, a.site.headers, { page_usertitle: 'Site 1 home' })).statusCode, 201);

  const agent = await connectAgent(a, { site: a.site2.siteId, approve: ['pages:read'] });
  t.after(() => agent.client.close());
  const asked = agent.authorizationUrl.searchParams;
  assert.equal(asked.get('resource'), `${a.base}/mcp`);
  assert.equal(asked.get('scope'), MCP_SCOPES.join(' '), 'the scopes the resource metadata offers');
  assert.equal(asked.get('code_challenge_method'), 'S256');
  assert.equal(agent.auth.tokens()?.scope, 'pages:read');

  const { tools: readTools } = await agent.client.listTools();
  assert.deepEqual(
    readTools.map((tool) => tool.name),
    ['list_pages', 'get_page'],
    'only the tools pages:read allows',
  );
  for (const tool of readTools) assert.equal(tool.annotations?.readOnlyHint, true, tool.name);

  const full = await connectAgent(a, { site: a.site2.siteId });
  t.after(() => full.client.close());
  const { tools } = await full.client.listTools();
  assert.deepEqual(
    tools.map((tool) => tool.name),
    TOOLS,
  );
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, 'object', tool.name);
    assert.equal(
      tool.outputSchema,
      undefined,
      `${tool.name}: results are the records as get_* answers them, described by save_*'s arguments`,
    );
    assert.ok((tool.description ?? '').length > 25, `${tool.name} says what it does`);
  }
  const savePage = tools.find((tool) => tool.name === 'save_page');
  assert.match(String(savePage?.description), /Inserts a page[\s\S]*page_parent[\s\S]*Needs scope pages:write/);
  assert.equal(savePage?.inputSchema.additionalProperties, false, 'unknown fields are refused, as in the REST API');

  const listed = await ok(agent, 'list_pages', {});
  assert.deepEqual(
    listed.data?.map((p) => p.page_usertitle),
    ['Site 2 home'],
    'the chosen website only',
  );

  // A tool the token's scopes do not allow is a tool error naming the scope, over an HTTP 200: the
  // agent reads why, and its session goes on.
  const denied = await refused(agent, 'save_page', { page_usertitle: 'Nope' });
  assert.equal(denied.status, 403);
  assert.equal(
    denied.detail,
    'The tool save_page needs the scope pages:write, which this access token was not granted: authorize again asking for scope pages:write.',
  );
  assert.equal((await postToolCall(a.base, accessToken(agent), 'save_page', { page_usertitle: 'Nope' })).status, 200);
  assert.equal((await refused(agent, 'list_blogs', {})).status, 403, 'pages:read reads no blogs');
  assert.equal((await ok(agent, 'list_pages', {})).meta?.total, 1, 'nothing was written');
});

test('MCP tools with good and bad input: the REST rules, validation naming the field, tool errors instead of crashes', async (t) => {
  const a = await startOAuthProcess(t);
  const agent = await connectAgent(a, { site: a.site.siteId });
  t.after(() => agent.client.close());
  assert.equal(agent.auth.tokens()?.scope, MCP_SCOPES.join(' '));

  // Pages.
  const home = (await ok(agent, 'save_page', { page_usertitle: 'Home Page' })).data?.[0];
  assert.equal(home?.page_alias, 'home-page', 'the alias is generated as over REST');
  const child = (await ok(agent, 'save_page', { page_usertitle: 'Child', page_parent: home?.page, page_privacy: 1 })).data?.[0];
  assert.equal(child?.page_parent, home?.page);
  const updated = (await ok(agent, 'save_page', { id: home?.page, page_menuname: 'Start' })).data?.[0];
  assert.equal(updated?.page_usertitle, 'Home Page', 'fields absent from an update stay');
  assert.equal(updated?.page_menuname, 'Start');
  assert.deepEqual(fields(await refused(agent, 'save_page', { page_usertitle: 5 })), ['page_usertitle']);
  assert.deepEqual(fields(await refused(agent, 'save_page', { page_usertitle: 'x', colour: 'red' })), ['colour']);
  assert.deepEqual(fields(await refused(agent, 'save_page', { page_usertitle: 'x', page_parent: 999999 })), ['page_parent']);
  assert.equal((await refused(agent, 'save_page', { id: 999999, page_usertitle: 'x' })).status, 404);

  const got = await ok(agent, 'get_page', { id: child?.page });
  assert.equal(got.data?.[0]?.page_usertitle, 'Child');
  assert.deepEqual(got.meta, { total: 1, offset: 0, pageSize: 200 });
  assert.deepEqual(fields(await refused(agent, 'get_page', { id: 'abc' })), ['id']);
  assert.deepEqual(fields(await refused(agent, 'get_page', {})), ['id']);
  assert.equal((await refused(agent, 'get_page', { id: 999999 })).status, 404);

  const listed = await ok(agent, 'list_pages', {});
  assert.equal(listed.meta?.total, 2);
  // A few fields by default (content.operations.ts, MCP_PAGE_FIELDS); fields or allFields ask for others.
  const keys = (record: object | undefined) => Object.keys(record ?? {}).sort();
  assert.deepEqual(keys(listed.data?.[0]), [
    'id',
    'page',
    'page_alias',
    'page_lastmodified',
    'page_parent',
    'page_privacy',
    'page_usertitle',
  ]);
  assert.deepEqual(keys((await ok(agent, 'list_pages', { fields: 'page_menuname' })).data?.[0]), ['id', 'page', 'page_menuname']);
  assert.ok(Object.keys((await ok(agent, 'list_pages', { allFields: 'true' })).data?.[0] ?? {}).length > 30);
  assert.deepEqual(
    (await ok(agent, 'list_pages', { publicContentOnly: 'true' })).data?.map((p) => p.page_usertitle),
    ['Home Page'],
    'publicContentOnly leaves out the member-only page',
  );
  assert.deepEqual((await ok(agent, 'list_pages', { title: 'chi%', pageSize: 1 })).meta, { total: 1, offset: 0, pageSize: 1 });
  assert.equal((await ok(agent, 'list_pages', { pageSize: 5000 })).meta?.pageSize, 200, 'the REST default for an out-of-range pageSize');
  assert.deepEqual(fields(await refused(agent, 'list_pages', { offset: -1 })), ['offset']);
  assert.deepEqual(fields(await refused(agent, 'list_pages', { sort: 'title' })), ['sort']);
  // Cursor paging passes through as on REST: two pages of one, the second the last.
  const first = await ok(agent, 'list_pages', { cursor: '', pageSize: 1 });
  assert.deepEqual(Object.keys(first.meta ?? {}), ['pageSize', 'nextCursor']);
  assert.equal(typeof first.meta?.nextCursor, 'string');
  const second = await ok(agent, 'list_pages', { cursor: first.meta?.nextCursor, pageSize: 1 });
  assert.deepEqual(second.meta, { pageSize: 1, nextCursor: null });
  assert.notEqual(second.data?.[0]?.page, first.data?.[0]?.page);
  assert.deepEqual(fields(await refused(agent, 'list_pages', { cursor: '', offset: 0 })).sort(), ['cursor', 'offset']);
  assert.deepEqual(fields(await refused(agent, 'list_blogs', { cursor: first.meta?.nextCursor })), ['cursor']);

  // Blogs, with an image referenced by the path an earlier upload got.
  const multipart = await form([
    ['data', JSON.stringify({ page: home?.page, info_title: 'Uploaded' })],
    ['uploadPrimaryImage', { file: await image('png', 40, 30), filename: 'photo.png', type: 'image/png' }],
  ]);
  const posted = await fetch(`${a.base}/api/blog`, {
    method: 'POST',
    headers: { ...a.site.headers, ...multipart.headers },
    body: multipart.payload,
  });
  const upload = { statusCode: posted.status, body: await posted.text() };
  assert.equal(upload.statusCode, 201, upload.body);
  const uploaded = json(upload).data[0];
  const blog = (
    await ok(agent, 'save_blog', { page: home?.page, info_title: 'Hello agents', info_img: uploaded.info_img, info_tags: 'ai,mcp' })
  ).data?.[0];
  assert.equal(blog?.info_filename, 'hello-agents');
  assert.equal(blog?.info_img, uploaded.info_img);
  assert.deepEqual(blog?.info_img_json, uploaded.info_img_json, "the image's metadata comes with its path");
  assert.deepEqual(fields(await refused(agent, 'save_blog', { info_title: 'No page' })), ['page']);
  assert.deepEqual(fields(await refused(agent, 'save_blog', { page: home?.page, info_date: '2024-02-30' })), ['info_date']);
  assert.deepEqual(fields(await refused(agent, 'save_blog', { page: 999999 })), ['page']);
  const migrated = (await ok(agent, 'save_blog', { id: blog?.info_id, info_img: '/images/other.png', migrateMode: true })).data?.[0];
  assert.equal(migrated?.info_img, uploaded.info_img, 'migrateMode keeps a populated primary image');

  assert.equal((await ok(agent, 'get_blog', { id: blog?.info_id })).data?.[0]?.info_title, 'Hello agents');
  assert.equal((await refused(agent, 'get_blog', { id: 999999 })).status, 404);
  assert.deepEqual(
    (await ok(agent, 'list_blogs', { tags: 'mcp' })).data?.map((b) => b.info_title),
    ['Hello agents'],
  );
  assert.deepEqual(fields(await refused(agent, 'list_blogs', { matchType: 'regex' })), ['matchType']);

  // Deletes, with the REST rules: a page that holds blogs is a conflict.
  assert.equal((await refused(agent, 'delete_page', { id: home?.page })).status, 409);
  assert.deepEqual(await ok(agent, 'delete_blog', { id: blog?.info_id }), { deleted: blog?.info_id });
  assert.equal((await refused(agent, 'delete_blog', { id: blog?.info_id })).status, 404);
  assert.deepEqual(fields(await refused(agent, 'delete_blog', { id: 0 })), ['id']);
  assert.deepEqual(await ok(agent, 'delete_page', { id: child?.page }), { deleted: child?.page });
  assert.deepEqual(fields(await refused(agent, 'delete_page', { id: -3 })), ['id']);

  await assert.rejects(agent.client.callTool({ name: 'drop_database', arguments: {} }), /Unknown tool/);
});

test('MCP history: a change made through MCP is listed with actor kind mcp and the connection; revisions listed and restored; a read-only token cannot restore', async (t) => {
  const a = await startOAuthProcess(t);
  const agent = await connectAgent(a, { site: a.site.siteId });
  t.after(() => agent.client.close());
  const reader = await connectAgent(a, { site: a.site.siteId, approve: ['everything:read'] });
  t.after(() => reader.client.close());

  const { tools } = await agent.client.listTools();
  // A hint a tool leaves out has the specification's default.
  const DEFAULT_HINTS = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };
  const annotations = (name: string) => ({ ...DEFAULT_HINTS, ...tools.find((tool) => tool.name === name)?.annotations });
  assert.equal(annotations('list_changes')?.readOnlyHint, true);
  assert.equal(annotations('list_revisions')?.readOnlyHint, true);
  // Destructive as the delete tools are; not idempotent, since each call records a new revision.
  assert.deepEqual(annotations('restore_revision'), {
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: false,
    openWorldHint: false,
  });
  assert.equal(annotations('delete_page')?.destructiveHint, true);
  assert.match(String(tools.find((tool) => tool.name === 'restore_revision')?.description), /Needs scope history:restore\.$/);

  const start = (await ok(agent, 'list_changes', {})).meta?.nextCursor;
  const created = (await ok(agent, 'save_page', { page_usertitle: 'Draft one' })).data?.[0];
  const id = created?.page;
  await ok(agent, 'save_page', { id, page_usertitle: 'Draft two' });

  // The feed names the MCP connection as the writer, as the owner's console lists it.
  const connection = (await listConnections(a.db.kysely, a.site.siteId)).find((c) => c.scopes.includes('everything:write'));
  assert.ok(connection);
  const feed = await ok(agent, 'list_changes', { since: start });
  assert.deepEqual(
    feed.data?.map((c) => [c.type, c.id, c.op, c.revision]),
    [
      ['page', id, 'create', 1],
      ['page', id, 'update', 2],
    ],
  );
  for (const change of feed.data ?? []) assert.deepEqual(change.actor, { kind: 'mcp', id: connection.id, name: 'Test agent' });
  assert.deepEqual(Object.keys(feed.meta ?? {}), ['pageSize', 'nextCursor']);
  assert.equal(feed.meta?.pageSize, 20, 'the MCP default');
  assert.deepEqual((await ok(reader, 'list_changes', { since: feed.meta?.nextCursor })).data, [], 'read-only tokens read the feed');
  assert.deepEqual(fields(await refused(agent, 'list_changes', { wait: 5 })), ['wait'], 'no long-poll over MCP');
  assert.deepEqual(fields(await refused(agent, 'list_changes', { since: 'not-a-cursor' })), ['since']);

  assert.deepEqual(
    (await ok(reader, 'list_revisions', { type: 'page', id })).data?.map((r) => [r.revision, r.op]),
    [
      [2, 'update'],
      [1, 'create'],
    ],
  );
  assert.equal((await refused(agent, 'list_revisions', { type: 'blog', id })).status, 404);
  assert.deepEqual(fields(await refused(agent, 'list_revisions', { type: 'pages', id })), ['type']);

  // A read-only token is refused the restore before it runs: a tool error naming the scope.
  assert.ok(!(await reader.client.listTools()).tools.some((tool) => tool.name === 'restore_revision'), 'not listed to a reader');
  const denied = await refused(reader, 'restore_revision', { type: 'page', id, revision: 1 });
  assert.equal(denied.status, 403);
  assert.match(denied.detail, /needs the scope history:restore/);

  const restored = (await ok(agent, 'restore_revision', { type: 'page', id, revision: 1 })).data?.[0];
  assert.equal(restored?.page_usertitle, 'Draft one');
  assert.equal((await ok(agent, 'get_page', { id })).data?.[0]?.page_usertitle, 'Draft one');
  const latest = (await ok(agent, 'list_revisions', { type: 'page', id })).data?.[0];
  assert.deepEqual([latest?.revision, latest?.op, latest?.actor], [3, 'restore', { kind: 'mcp', id: connection.id, name: 'Test agent' }]);
  assert.equal((await refused(agent, 'restore_revision', { type: 'page', id, revision: 9 })).status, 404);

  // A deleted blog comes back under its id.
  const blog = (await ok(agent, 'save_blog', { page: id, info_title: 'Gone for a moment' })).data?.[0];
  await ok(agent, 'delete_blog', { id: blog?.info_id });
  const back = (await ok(agent, 'restore_revision', { type: 'blog', id: blog?.info_id, revision: 1 })).data?.[0];
  assert.deepEqual([back?.info_id, back?.info_title], [blog?.info_id, 'Gone for a moment']);
});

test('MCP: revoking the connection takes effect on the next call; tokens are bound to their resource both ways', async (t) => {
  const a = await startOAuthProcess(t);
  const agent = await connectAgent(a, { site: a.site.siteId });
  t.after(() => agent.client.close());
  const token = accessToken(agent);

  // An MCP token is refused by the REST API, a REST token by the MCP server.
  const rest = await fetch(`${a.base}/api/page`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(rest.status, 401);
  assert.match(String(rest.headers.get('www-authenticate')), /error="invalid_token"/);
  assert.match(
    ((await rest.json()) as { detail: string }).detail,
    /issued for .*\/mcp, not for /,
    'it says the token is for the other resource',
  );
  const restToken = (await connect(a)).tokens.access_token;
  assert.equal((await fetch(`${a.base}/api/page`, { headers: { authorization: `Bearer ${restToken}` } })).status, 200);
  const mcp = await postToolCall(a.base, restToken, 'list_pages');
  assert.equal(mcp.status, 401);
  assert.match(String(mcp.headers.get('www-authenticate')), /error="invalid_token", resource_metadata=".*\/oauth-protected-resource\/mcp"/);

  // Stateless: nothing to GET or DELETE.
  const stream = await fetch(`${a.base}/mcp`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
  assert.equal(stream.status, 405);
  assert.equal(stream.headers.get('allow'), 'POST');

  // The connection shows up like any other, and the owner revokes it.
  await ok(agent, 'list_pages', {});
  const connections = await listConnections(a.db.kysely, a.site.siteId);
  const mine = connections.find((c) => c.client_name === 'Test agent' && c.status === 'active');
  assert.ok(mine, JSON.stringify(connections));
  assert.deepEqual(mine.scopes, MCP_SCOPES);
  await revokeInConsole(a, a.site.siteId, mine.client_id);
  assert.equal((await postToolCall(a.base, token, 'list_pages')).status, 401, 'the very next request');
  await assert.rejects(call(agent, 'list_pages', {}), 'the SDK client cannot refresh a revoked connection either');
});

test('the authorization server: resource {base_url}/mcp is accepted with its own scopes only', async (t) => {
  const a: OAuthProcess = await startOAuthProcess(t);
  const { challenge } = await pkcePair();
  const products = authorizeUrl(a.issuer, {
    clientId: a.clientId,
    codeChallenge: challenge,
    resource: `${a.base}/mcp`,
    scope: 'product:read',
  });
  const refusedScope = await fetch(products, { redirect: 'manual' });
  const location = new URL(String(refusedScope.headers.get('location')));
  assert.equal(location.searchParams.get('error'), 'invalid_scope');
  assert.match(String(location.searchParams.get('error_description')), /not offered by this resource: product:read/);
  // No MCP tool manages webhooks: the scope is the REST API's only.
  const hooks = authorizeUrl(a.issuer, {
    clientId: a.clientId,
    codeChallenge: challenge,
    resource: `${a.base}/mcp`,
    scope: 'webhooks:manage',
  });
  const hooksLocation = new URL(String((await fetch(hooks, { redirect: 'manual' })).headers.get('location')));
  assert.equal(hooksLocation.searchParams.get('error'), 'invalid_scope');
  const other = authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge, resource: `${a.base}/mcp/other` });
  const target = new URL(String((await fetch(other, { redirect: 'manual' })).headers.get('location')));
  assert.equal(target.searchParams.get('error'), 'invalid_target');
});
