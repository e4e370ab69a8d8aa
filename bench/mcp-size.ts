/**
 * What an agent receives from /mcp, in bytes: the tools/list answer and a list_pages answer (the
 * default fields and every field), each as sent without Accept-Encoding and with gzip and br.
 * Tokens are estimated as bytes / 4 of the plain JSON (no tokenizer is bundled). One app in this
 * process on an in-memory SQLite database with 60 pages of realistic text, an agent connected
 * through the real OAuth flow (test/mcp.helpers.ts). `npm run bench:mcp [-- --json]`.
 * A measurement, not a test: exits 0 unless it crashed.
 */
import { request as httpRequest } from 'node:http';
import type { TestContext } from 'node:test';
import { parseArgs } from 'node:util';
import { connectAgent, realisticPage } from '../test/mcp.helpers.js';
import { startOAuthApp } from '../test/oauth.helpers.js';

const { values: args } = parseArgs({ options: { json: { type: 'boolean', default: false } } });

/** The helpers clean up through a test's `after`; here, once the figures are printed. */
const cleanups: Array<() => unknown> = [];
const context = { after: (fn: () => unknown) => cleanups.push(fn) } as unknown as TestContext;

/** One POST to /mcp with the bytes as they came over the wire (fetch would decode them). */
function post(url: string, token: string, body: object, encoding?: string) {
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
    ...(encoding ? { 'accept-encoding': encoding } : {}),
  };
  return new Promise<{ status: number; encoding: string | undefined; bytes: number }>((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, encoding: res.headers['content-encoding'], bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const a = await startOAuthApp(context, { config: { rateLimits: { api: 0, token: 0 } } as never });
try {
  for (let i = 0; i < 60; i++) {
    const page = realisticPage(i);
    const answer = await a.app.inject({ method: 'POST', url: '/api/page', headers: a.site.headers, payload: page });
    if (answer.statusCode !== 201) throw new Error(`seeding: ${answer.statusCode} ${answer.body}`);
  }
  const agent = await connectAgent(a, { site: a.site.siteId });
  cleanups.push(() => agent.client.close());
  const token = agent.auth.tokens()?.access_token;
  if (!token) throw new Error('no access token');

  const call = (name: string, args: object) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
  const messages: Record<string, object> = {
    'tools/list': { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    'list_pages {}': call('list_pages', {}),
    'list_pages every field': call('list_pages', { allFields: 'true' }),
  };
  const rows: Array<Record<string, string | number>> = [];
  for (const [label, message] of Object.entries(messages)) {
    const row: Record<string, string | number> = { answer: label };
    for (const encoding of ['identity', 'gzip', 'br']) {
      const answer = await post(`${a.base}/mcp`, token, message, encoding === 'identity' ? undefined : encoding);
      if (answer.status !== 200) throw new Error(`${label}: ${answer.status}`);
      const sent = answer.encoding ?? 'identity';
      row[encoding] = sent === encoding ? answer.bytes : `${answer.bytes} (${sent})`;
    }
    row.tokens = Math.round(Number(row.identity) / 4);
    rows.push(row);
  }
  if (args.json) console.log(JSON.stringify(rows, null, 2));
  else {
    console.log('bytes per answer (identity, gzip, br as received), tokens ≈ identity bytes / 4');
    console.table(rows);
  }
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup();
}
