import assert from 'node:assert/strict';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { type Answers, Browser, completeInteraction, type OAuthServer } from './oauth.helpers.js';

/** The agent's callback: another origin than the server's, so the test browser stops there. */
export const AGENT_REDIRECT = 'http://127.0.0.1:1/callback';

/** An agent's OAuth state, in memory: what the SDK asks a real client to keep. */
export class AgentAuth implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  private information: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = '';

  constructor(
    readonly redirectUrl = AGENT_REDIRECT,
    readonly clientMetadataUrl?: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test agent',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

export interface Agent {
  client: Client;
  auth: AgentAuth;
  /** The URL the SDK sent the owner's browser to. */
  authorizationUrl: URL;
}

/**
 * What an MCP client does on first contact: its request is refused (401), it discovers the
 * resource and its authorization server, registers (or presents its metadata document URL), and
 * sends the owner to authorize; the owner signs in, picks the website and approves; the client
 * exchanges the code and connects again with the token.
 */
export async function connectAgent(a: OAuthServer, answers: Answers = {}, auth = new AgentAuth()): Promise<Agent> {
  const url = new URL(`${a.base}/mcp`);
  const first = new StreamableHTTPClientTransport(url, { authProvider: auth });
  await assert.rejects(new Client({ name: 'test-agent', version: '1.0.0' }).connect(first), UnauthorizedError);
  const authorizationUrl = auth.authorizationUrl;
  assert.ok(authorizationUrl, 'the SDK asked for an authorization');
  const step = await completeInteraction(answers.browser ?? new Browser(a.base), authorizationUrl.href, { login: a.owner, ...answers });
  const code = step.callback?.searchParams.get('code');
  assert.ok(code, `no code: ${step.status} ${step.callback ?? step.html.slice(0, 400)}`);
  await first.finishAuth(code);
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: auth }));
  return { client, auth, authorizationUrl };
}

/** A JSON-RPC request posted by hand, to see the HTTP answer the SDK client hides. */
export function postMcp(base: string, token: string, method: string, params?: object) {
  return fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, ...(params ? { params } : {}) }),
  });
}

/** A tools/call posted by hand (postMcp). */
export function postToolCall(base: string, token: string, name: string, args: Record<string, unknown> = {}) {
  return postMcp(base, token, 'tools/call', { name, arguments: args });
}

/** Words of a realistic text, the same for a given seed: what an agent's list answers are measured on. */
export const words = (n: number, seed: number) =>
  Array.from({ length: n }, (_, i) => ['bread', 'oven', 'flour', 'crème', 'bakery', 'yeast'][(i * 7 + seed) % 6]).join(' ');

/** A body of twelve paragraphs of those words, with links. */
export const html = (seed: number) =>
  Array.from({ length: 12 }, (_, i) => `<p>${words(40, seed + i)} <a href="/x">${words(3, i)}</a></p>`).join('\n');

/** The i-th page of realistic text, as a POST /api/page body. */
export function realisticPage(i: number): Record<string, string> {
  const title = `${words(8, i)} ${i}`;
  return {
    page_usertitle: title,
    page_menuname: words(2, i),
    page_summary: words(30, i),
    page_metatitle: `${title} | Bakery`,
    page_keywords: words(3, i).replace(/ /g, ', '),
    page_html_content: html(i),
    page_html_intro: `<p>${words(30, i)}</p>`,
  };
}
