import assert from 'node:assert/strict';
import { test } from 'node:test';
import { grantedBy, SCOPES, type Scope } from '../src/auth/scopes.js';
import { json } from './helpers.js';
import { postMcp, postToolCall } from './mcp.helpers.js';
import { connect, type OAuthTestApp, startOAuthApp } from './oauth.helpers.js';

/**
 * Every route the content API guards, with the one scope it declares. The test below checks that
 * this table is every secured operation of the OpenAPI document, so a route added without a row
 * here fails it. `alias`: also served under /webapps/api, with the same scope.
 */
const ROUTES: ReadonlyArray<{ method: string; url: string; scope: Scope; body?: object; alias?: true }> = [
  { method: 'GET', url: '/api/page', scope: 'pages:read', alias: true },
  { method: 'GET', url: '/api/page/999999', scope: 'pages:read', alias: true },
  { method: 'POST', url: '/api/page', scope: 'pages:write', body: { page_usertitle: 'Scoped' }, alias: true },
  { method: 'PATCH', url: '/api/page/999999', scope: 'pages:write', body: { page_usertitle: 'Scoped' }, alias: true },
  { method: 'DELETE', url: '/api/page/999999', scope: 'pages:write', alias: true },
  { method: 'GET', url: '/api/blog', scope: 'blogs:read', alias: true },
  { method: 'GET', url: '/api/blog/999999', scope: 'blogs:read', alias: true },
  { method: 'POST', url: '/api/blog', scope: 'blogs:write', body: { info_title: 'Scoped', page: 999999 }, alias: true },
  { method: 'PATCH', url: '/api/blog/999999', scope: 'blogs:write', body: { info_title: 'Scoped' }, alias: true },
  { method: 'DELETE', url: '/api/blog/999999', scope: 'blogs:write', alias: true },
  { method: 'GET', url: '/api/changes', scope: 'history:read', alias: true },
  { method: 'GET', url: '/api/page/999999/revisions', scope: 'history:read', alias: true },
  { method: 'GET', url: '/api/page/999999/revisions/1', scope: 'history:read', alias: true },
  { method: 'POST', url: '/api/page/999999/revisions/1/restore', scope: 'history:restore', alias: true },
  { method: 'GET', url: '/api/blog/999999/revisions', scope: 'history:read', alias: true },
  { method: 'GET', url: '/api/blog/999999/revisions/1', scope: 'history:read', alias: true },
  { method: 'POST', url: '/api/blog/999999/revisions/1/restore', scope: 'history:restore', alias: true },
  { method: 'POST', url: '/api/webhooks', scope: 'webhooks:manage', body: {} },
  { method: 'GET', url: '/api/webhooks', scope: 'webhooks:manage' },
  { method: 'GET', url: '/api/webhooks/999999', scope: 'webhooks:manage' },
  { method: 'PATCH', url: '/api/webhooks/999999', scope: 'webhooks:manage', body: { description: 'Scoped' } },
  { method: 'DELETE', url: '/api/webhooks/999999', scope: 'webhooks:manage' },
  { method: 'POST', url: '/api/webhooks/999999/rotate-secret', scope: 'webhooks:manage' },
  { method: 'GET', url: '/api/webhooks/999999/deliveries', scope: 'webhooks:manage' },
  { method: 'POST', url: '/api/webhooks/999999/deliveries/1/retry', scope: 'webhooks:manage' },
  { method: 'POST', url: '/api/webhooks/999999/test', scope: 'webhooks:manage' },
];

/** Every MCP tool with the scope it declares (the route's it stands for). */
const TOOLS: ReadonlyArray<{ name: string; scope: Scope; args: Record<string, unknown> }> = [
  { name: 'list_pages', scope: 'pages:read', args: {} },
  { name: 'get_page', scope: 'pages:read', args: { id: 999999 } },
  { name: 'save_page', scope: 'pages:write', args: { id: 999999, page_usertitle: 'Scoped' } },
  { name: 'delete_page', scope: 'pages:write', args: { id: 999999 } },
  { name: 'list_blogs', scope: 'blogs:read', args: {} },
  { name: 'get_blog', scope: 'blogs:read', args: { id: 999999 } },
  { name: 'save_blog', scope: 'blogs:write', args: { id: 999999, info_title: 'Scoped' } },
  { name: 'delete_blog', scope: 'blogs:write', args: { id: 999999 } },
  { name: 'list_changes', scope: 'history:read', args: {} },
  { name: 'list_revisions', scope: 'history:read', args: { type: 'page', id: 999999 } },
  { name: 'restore_revision', scope: 'history:restore', args: { type: 'page', id: 999999, revision: 1 } },
];

const NARROW: readonly Scope[] = [
  'pages:read',
  'pages:write',
  'blogs:read',
  'blogs:write',
  'history:read',
  'history:restore',
  'webhooks:manage',
];

/**
 * Each narrow scope that does not grant `scope`: a token granted all of them holds every
 * permission but this one (and those that carry it), which is what "lacks the scope" should mean.
 */
function allBut(scope: Scope, offered: readonly Scope[]): Scope[] {
  return offered.filter((s) => !grantedBy(scope).includes(s));
}

async function tokenFor(a: OAuthTestApp, scopes: readonly Scope[], resource = a.base): Promise<string> {
  return (await connect(a, { scope: scopes.join(' '), resource })).tokens.access_token;
}

function request(a: OAuthTestApp, route: (typeof ROUTES)[number], url: string, token: string) {
  return a.app.inject({
    method: route.method as 'GET',
    url,
    headers: { authorization: `Bearer ${token}` },
    ...(route.body ? { payload: route.body } : {}),
  });
}

test('the table names every secured operation of the OpenAPI document, with the scope it declares', async (t) => {
  const a = await startOAuthApp(t);
  const doc = json(await a.app.inject({ url: '/api/openapi.json' }));
  const declared: string[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { security?: Array<Record<string, string[]>> }>>)) {
    for (const [method, operation] of Object.entries(item)) {
      const oauth = operation.security?.find((s) => s.oauth2)?.oauth2;
      if (oauth) declared.push(`${method.toUpperCase()} ${path} ${oauth[0]}`);
    }
  }
  const concrete = (path: string) => path.replace(/\{id\}/g, '999999').replace(/\{revision\}|\{delivery\}/g, '1');
  assert.deepEqual(
    declared.map((line) => line.replace(/ (\S+) /, (_, path: string) => ` ${concrete(path)} `)).sort(),
    ROUTES.map((r) => `${r.method} ${r.url} ${r.scope}`).sort(),
  );
});

for (const scope of NARROW) {
  test(`${scope}: every route that needs it answers a token granted only it, and refuses one granted every other scope with 403 insufficient_scope`, async (t) => {
    const a = await startOAuthApp(t);
    const holder = await tokenFor(a, [scope]);
    const lacker = await tokenFor(a, allBut(scope, NARROW));
    const routes = ROUTES.filter((r) => r.scope === scope);
    assert.ok(routes.length > 0);
    for (const route of routes) {
      for (const url of route.alias ? [route.url, route.url.replace('/api/', '/webapps/api/')] : [route.url]) {
        const allowed = await request(a, route, url, holder);
        assert.ok(
          ![401, 403].includes(allowed.statusCode) && allowed.statusCode < 500,
          `${route.method} ${url}: ${allowed.statusCode} ${allowed.body}`,
        );
        const denied = await request(a, route, url, lacker);
        assert.equal(denied.statusCode, 403, `${route.method} ${url}`);
        assert.match(String(denied.headers['content-type']), /^application\/problem\+json/);
        assert.match(
          String(denied.headers['www-authenticate']),
          new RegExp(`^Bearer realm="content-api", error="insufficient_scope", scope="${scope}"`),
        );
        assert.match(json(denied).detail, new RegExp(`needs the scope ${scope}, which this access token was not granted`));
      }
    }
  });
}

test('the broad scopes keep working: everything:write passes every route, everything:read every read', async (t) => {
  const a = await startOAuthApp(t);
  const writer = await tokenFor(a, ['everything:write']);
  const reader = await tokenFor(a, ['everything:read']);
  for (const route of ROUTES) {
    const written = await request(a, route, route.url, writer);
    assert.ok(![401, 403].includes(written.statusCode), `${route.method} ${route.url} with everything:write: ${written.statusCode}`);
    const read = await request(a, route, route.url, reader);
    const reads = route.scope.endsWith(':read');
    assert.equal(read.statusCode === 403, !reads, `${route.method} ${route.url} with everything:read: ${read.statusCode}`);
  }
});

/** The MCP scopes: every narrow one but webhooks:manage, which no tool needs. */
const MCP_NARROW = NARROW.filter((s) => s !== 'webhooks:manage');

async function listTools(a: OAuthTestApp, token: string): Promise<string[]> {
  const response = await postMcp(a.base, token, 'tools/list');
  assert.equal(response.status, 200);
  const body = (await response.json()) as { result: { tools: Array<{ name: string }> } };
  return body.result.tools.map((tool) => tool.name);
}

/** A tools/call's result: whether it is a tool error, and the status of the problem it carries. */
async function callTool(a: OAuthTestApp, token: string, name: string, args: Record<string, unknown>) {
  const response = await postToolCall(a.base, token, name, args);
  assert.equal(response.status, 200, `${name} answers over HTTP; a scope is the tool's to refuse`);
  const body = (await response.json()) as { result: { isError?: boolean; content: Array<{ text: string }> } };
  const problem = body.result.isError ? (JSON.parse(body.result.content[0]!.text) as { status: number; detail: string }) : undefined;
  return { problem };
}

for (const scope of MCP_NARROW) {
  test(`MCP ${scope}: a token granted only it lists and runs its tools; one granted every other scope sees none of them and gets a tool error`, async (t) => {
    const a = await startOAuthApp(t);
    const resource = `${a.base}/mcp`;
    const holder = await tokenFor(a, [scope], resource);
    const lacker = await tokenFor(a, allBut(scope, MCP_NARROW), resource);
    const tools = TOOLS.filter((tool) => tool.scope === scope);
    assert.ok(tools.length > 0);
    const held = await listTools(a, holder);
    const lacked = await listTools(a, lacker);
    for (const tool of tools) {
      assert.ok(held.includes(tool.name), `${tool.name} is listed to ${scope}`);
      assert.ok(!lacked.includes(tool.name), `${tool.name} is not listed without ${scope}`);
      const allowed = await callTool(a, holder, tool.name, tool.args);
      assert.notEqual(allowed.problem?.status, 403, `${tool.name}: ${allowed.problem?.detail}`);
      const denied = await callTool(a, lacker, tool.name, tool.args);
      assert.equal(denied.problem?.status, 403, tool.name);
      assert.equal(
        denied.problem?.detail,
        `The tool ${tool.name} needs the scope ${scope}, which this access token was not granted: authorize again asking for scope ${scope}.`,
      );
    }
  });
}

test('the table names every MCP tool, and every scope but product and order is some route’s', async (t) => {
  const a = await startOAuthApp(t);
  const all = await listTools(a, await tokenFor(a, ['everything:write'], `${a.base}/mcp`));
  assert.deepEqual([...all].sort(), TOOLS.map((tool) => tool.name).sort());
  const used = new Set(ROUTES.map((r) => r.scope));
  assert.deepEqual(
    SCOPES.filter((s) => !used.has(s)),
    ['everything:read', 'everything:write', 'product:read', 'product:write', 'order:read', 'order:write'],
  );
});
