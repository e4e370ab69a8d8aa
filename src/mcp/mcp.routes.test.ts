import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { type TestContext, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { connectAgent } from '../../test/mcp.helpers.js';
import { startOAuthApp } from '../../test/oauth.helpers.js';

// The JSON-RPC answers of /mcp to messages the SDK's client never sends, posted by hand. In the
// test process (startOAuthApp), as test/mcp.cimd.test.ts: the flows themselves are tested against
// a server process in test/mcp.e2e.test.ts.

const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
};

/** A server and an MCP access token for it; `post` sends a raw body to /mcp with that token. */
async function mcpServer(t: TestContext) {
  const a = await startOAuthApp(t);
  const agent = await connectAgent(a, { site: a.site.siteId });
  t.after(() => agent.client.close());
  const token = agent.auth.tokens()?.access_token;
  assert.ok(token);
  const post = async (body: string, headers: Record<string, string> = { authorization: `Bearer ${token}` }) => {
    const response = await fetch(`${a.base}/mcp`, { method: 'POST', headers: { ...HEADERS, ...headers }, body });
    const text = await response.text();
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      bytes: Buffer.byteLength(text),
      body: text ? JSON.parse(text) : undefined,
    };
  };
  return { a, token, post };
}

const call = (params?: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', ...(params === undefined ? {} : { params }) });

test('tools/call with params its schema refuses is -32602 invalid params with a short message; wrong arguments of a tool are a tool error', async (t) => {
  const { post } = await mcpServer(t);
  const cases: [unknown, RegExp][] = [
    [undefined, /^Invalid params: tools\/call needs params/],
    [{ arguments: {} }, /^Invalid params: name must be a tool name/],
    [{ name: 'list_pages', arguments: 'x' }, /^Invalid params: arguments must be an object \(or left out\), not a string\.$/],
    [{ name: 'list_pages', arguments: null }, /not null\.$/],
    [{ name: 'list_pages', arguments: [1] }, /not an array\.$/],
    [{ name: 'drop_database', arguments: {} }, /^Unknown tool: drop_database$/],
  ];
  for (const [params, message] of cases) {
    const answer = await post(call(params));
    assert.equal(answer.status, 200, JSON.stringify(params));
    assert.equal(answer.body.id, 7);
    assert.equal(answer.body.error?.code, -32602, JSON.stringify(answer.body));
    assert.match(answer.body.error.message, message);
  }

  // Arguments left out are no arguments; an object the tool refuses is its problem, as a tool error.
  const listed = await post(call({ name: 'list_pages' }));
  // The MCP list default (content.operations.ts), not REST's 200.
  assert.deepEqual(listed.body.result.structuredContent.meta, { total: 0, offset: 0, pageSize: 20 });
  const refused = await post(call({ name: 'get_page', arguments: { id: 'abc' } }));
  assert.equal(refused.body.result.isError, true);
  assert.equal(JSON.parse(refused.body.result.content[0].text).errors[0].field, 'id');

  // Arguments nested past any tool's schema are a 400 naming the argument, not a 500 from copying them.
  const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
  const nested = await post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_pages","arguments":{"title":${deep}}}}`);
  assert.equal(nested.status, 200);
  assert.equal(nested.body.result.isError, true);
  const problem = JSON.parse(nested.body.result.content[0].text);
  assert.equal(problem.status, 400, JSON.stringify(problem));
  assert.deepEqual(problem.errors, [{ field: 'title', message: 'nests more than 32 levels deep' }]);
});

test('a body that is not JSON is -32700 parse error and an empty batch -32600 invalid request, both HTTP 400; credentials come first', async (t) => {
  const { post } = await mcpServer(t);
  for (const body of ['{not json', '', '{"__proto__": {"x": 1}}']) {
    const answer = await post(body);
    assert.equal(answer.status, 400, body);
    assert.match(String(answer.type), /^application\/json/);
    assert.deepEqual(answer.body, {
      jsonrpc: '2.0',
      error: { code: -32700, message: 'Parse error: the body is not valid JSON.' },
      id: null,
    });
  }
  const empty = await post('[]');
  assert.equal(empty.status, 400);
  assert.deepEqual(empty.body, { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: an empty batch.' }, id: null });

  assert.equal((await post('{not json', {})).status, 401, 'without a token, nothing is read');
});

test('GET, HEAD and DELETE on /mcp are 405 with Allow: POST, with or without a token', async (t) => {
  const { a, token } = await mcpServer(t);
  for (const method of ['GET', 'HEAD', 'DELETE']) {
    for (const headers of [{}, { authorization: `Bearer ${token}` }, { authorization: 'Bearer not-a-token' }] as Record<string, string>[]) {
      const response = await fetch(`${a.base}/mcp`, { method, headers: { accept: 'text/event-stream', ...headers } });
      assert.equal(response.status, 405, `${method} ${JSON.stringify(headers)}`);
      assert.equal(response.headers.get('allow'), 'POST');
      assert.equal(response.headers.get('www-authenticate'), null);
    }
  }
});

/**
 * What every agent pays in context before its first call. The limit is the point: a tool, an
 * argument or a description that would take tools/list past it has to make room first.
 */
const TOOLS_LIST_LIMIT = 20_000;

test('the tools/list answer stays under 20 KB', async (t) => {
  const { post } = await mcpServer(t);
  const answer = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }));
  assert.equal(answer.status, 200);
  assert.equal(answer.body.result.tools.length, 11);
  assert.ok(answer.bytes <= TOOLS_LIST_LIMIT, `tools/list is ${answer.bytes} bytes, more than ${TOOLS_LIST_LIMIT}`);
});

/** A POST to /mcp with the bytes as they came over the wire (fetch would decode them, and asks for gzip and br itself). */
function rawPost(url: string, headers: Record<string, string>, body: string) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { ...HEADERS, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('MCP answers are compressed when Accept-Encoding asks (br, gzip), plain otherwise, with the headers of every answer', async (t) => {
  const { a, token } = await mcpServer(t);
  const auth = { authorization: `Bearer ${token}` };
  const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
  const plain = await rawPost(`${a.base}/mcp`, auth, list);
  assert.equal(plain.status, 200);
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.match(String(plain.headers['content-type']), /^application\/json/);
  assert.match(String(plain.headers.vary), /accept-encoding/i, 'a cache keys the answer on Accept-Encoding');
  assert.equal(plain.headers['cache-control'], 'no-store');
  assert.ok(plain.headers['x-request-id']);
  const tools = JSON.parse(plain.body.toString()).result.tools as unknown[];
  assert.equal(tools.length, 11);

  for (const [encoding, decode] of [
    ['gzip', gunzipSync],
    ['br', brotliDecompressSync],
  ] as const) {
    const packed = await rawPost(`${a.base}/mcp`, { ...auth, 'accept-encoding': encoding }, list);
    assert.equal(packed.status, 200);
    assert.equal(packed.headers['content-encoding'], encoding);
    assert.ok(packed.body.length < plain.body.length / 2, `${encoding}: ${packed.body.length} of ${plain.body.length} bytes`);
    assert.deepEqual(JSON.parse(decode(packed.body).toString()), JSON.parse(plain.body.toString()));
  }

  // A tool call's answer too, and a notification's 202 has no body to compress.
  for (let i = 0; i < 5; i++) {
    const page = { page_usertitle: `Page ${i}`, page_html_content: '<p>Fresh bread every morning.</p>'.repeat(20) };
    assert.equal((await a.app.inject({ method: 'POST', url: '/api/page', headers: a.site.headers, payload: page })).statusCode, 201);
  }
  const listPages = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_pages', arguments: { allFields: 'true' } } };
  const call = await rawPost(`${a.base}/mcp`, { ...auth, 'accept-encoding': 'gzip' }, JSON.stringify(listPages));
  assert.equal(call.status, 200);
  assert.equal(call.headers['content-encoding'], 'gzip');
  assert.equal(JSON.parse(gunzipSync(call.body).toString()).result.structuredContent.meta.total, 5);
  const notified = await rawPost(
    `${a.base}/mcp`,
    { ...auth, 'accept-encoding': 'gzip' },
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  );
  assert.equal(notified.status, 202);
  assert.equal(notified.body.length, 0);
});
