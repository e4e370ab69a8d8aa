import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import * as oauth from 'oauth4webapi';
import { addSiteUser } from '../src/accounts/account.repository.js';
import { createUser } from '../src/accounts/account.service.js';
import type { PrincipalCache } from '../src/auth/principal-cache.js';
import type { Config } from '../src/config.js';
import { createDatabase, type Db } from '../src/db/database.js';
import type { OutboundFetch } from '../src/http/outbound.js';
import { createClient } from '../src/oauth/clients/client.service.js';
import { addTestSite, buildTestApp, createEmptyPostgresDatabase, TEST_DATABASE_URL, type TestApp, type TestSite } from './helpers.js';
import { freePort, listening, type Started, start } from './server-process.js';

export const REDIRECT_URI = 'https://app.example/callback';
export const PASSWORD = 'correct horse battery';

/** What the OAuth and MCP tests need of a server, in the test process or in a process of its own. */
export interface OAuthServer {
  /** The server's own address: PUBLIC_URL, the OAuth resource. */
  base: string;
  issuer: string;
  clientId: string;
  /** A website with an API credential, whose owner is `owner`. */
  site: TestSite;
  /** A second website, so the owner has two to choose from. */
  site2: TestSite;
  owner: { id: number; email: string; password: string };
  /** The server's database, for set-up and direct checks. */
  db: Db;
}

export interface OAuthTestApp extends TestApp, OAuthServer {}

/**
 * A listening server on 127.0.0.1 with a random port (openid-client needs a real URL), an owner
 * of two websites and a registered client. PUBLIC_URL is the server's own address.
 */
export async function startOAuthApp(
  t: TestContext,
  options: {
    db?: Db;
    config?: Partial<Config>;
    twoSites?: boolean;
    principals?: PrincipalCache;
    metadataDocumentFetch?: OutboundFetch;
  } = {},
) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const app = await buildTestApp(t, {
    db: options.db,
    config: { publicUrl: base, ...options.config },
    ...(options.principals ? { principals: options.principals } : {}),
    ...(options.metadataDocumentFetch ? { metadataDocumentFetch: options.metadataDocumentFetch } : {}),
  });
  await app.app.listen({ port, host: '127.0.0.1' });
  const result: OAuthTestApp = { ...app, ...(await seedOAuth(app.db, app.site, base, options.twoSites !== false)) };
  return result;
}

/** The owner of `site` (and of a second website when `twoSites`) and a registered client. */
async function seedOAuth(db: Db, site: TestSite, base: string, twoSites: boolean): Promise<OAuthServer> {
  const email = `owner-${new URL(base).port}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const user = await createUser(db.kysely, { email, password: PASSWORD, siteId: site.siteId });
  const site2 = await addTestSite(db, 'Second site');
  if (twoSites) await addSiteUser(db.kysely, site2.siteId, user.id, 'admin');
  const { clientId } = await createClient(db.kysely, { name: 'Test app', redirectUris: [REDIRECT_URI] });
  return { base, issuer: `${base}/api/auth`, clientId, site, site2, owner: { id: user.id, email, password: PASSWORD }, db };
}

export interface OAuthProcess extends OAuthServer {
  /** The server process (`dist/src/server.js`): its output, its exit. */
  server: Started;
  /** Its DATA_DIR (the SQLite file, when there is no TEST_DATABASE_URL, and the images). */
  dataDir: string;
}

/**
 * What startOAuthApp sets up, served by a real server process (`npm start`'s dist/src/server.js)
 * configured by its environment only: a SQLite file in a DATA_DIR of its own, or (with
 * TEST_DATABASE_URL) a fresh PostgreSQL database. The process migrates the empty database; the
 * test then opens it to add the owner of two websites and a client, as an administrator would
 * with the CLI. `env` adds to or overrides the process's environment.
 */
export async function startOAuthProcess(t: TestContext, options: { env?: Record<string, string>; twoSites?: boolean } = {}) {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-oauth-'));
  const database = TEST_DATABASE_URL ? await createEmptyPostgresDatabase(t) : undefined;
  const databaseUrl = database?.url ?? `sqlite:${path.join(dataDir, 'cms.sqlite')}`;
  const server = await start(t, {
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    DEMO_DATA: 'false',
    COOKIE_SECRETS: randomBytes(32).toString('base64url'),
    ...options.env,
  });
  let sqlite: Db | undefined;
  t.after(async () => {
    // The process and the test's SQLite handle go before their folder does.
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await Promise.all([server.exit, sqlite?.close()]);
    await rm(dataDir, { recursive: true, force: true });
  });
  await listening(server);
  if (!database) sqlite = createDatabase(databaseUrl);
  const db = sqlite ?? database!.open();
  const site = await addTestSite(db);
  const result: OAuthProcess = { ...(await seedOAuth(db, site, server.base, options.twoSites !== false)), server, dataDir };
  return result;
}

/** The CSRF token a page's form carries (the console's and the sign-in pages' forms alike), if any. */
function csrfIn(html: string): string | undefined {
  return /name="csrf" value="([^"]+)"/.exec(html)?.[1];
}

/** The console's sign-in, as a browser does it: the form (and its cookie), then the POST. */
export async function consoleLogin(a: OAuthServer, password = a.owner.password, email = a.owner.email) {
  const browser = new Browser(a.base);
  const page = await browser.request('/console/login');
  assert.equal(page.status, 200);
  const csrf = csrfIn(await page.text()) ?? '';
  const response = await browser.request('/console/login', { form: { csrf, email, password, next: '/console' } });
  return { browser, response };
}

/** The CSRF token of a console page (every signed-in page carries it in the sign-out form). */
export async function csrfOf(browser: Browser, path = '/console'): Promise<string> {
  const html = await (await browser.request(path)).text();
  const csrf = csrfIn(html);
  assert.ok(csrf, `no csrf on ${path}`);
  return csrf;
}

/**
 * Revokes an application as its owner does, in the console of the server `a` (sign in, then the
 * confirmation form's POST): every connection it has to the website ends. The node that serves
 * the next request is the one that revoked.
 */
export async function revokeInConsole(a: OAuthServer, siteId: number, clientId: string): Promise<void> {
  const { browser } = await consoleLogin(a);
  const path = `/console/sites/${siteId}/applications/${encodeURIComponent(clientId)}/revoke`;
  const revoked = await browser.request(path, { form: { csrf: await csrfOf(browser, path) } });
  assert.equal(revoked.status, 303, `the console revoked the application (${revoked.status})`);
}

/** A browser in miniature: a cookie jar (name+path), manual redirects, HTML forms read by pattern. */
export class Browser {
  private readonly cookies = new Map<string, { name: string; value: string; path: string }>();

  /** `headers` go with every request, e.g. an X-Forwarded-For a proxy (or a forger) would add. */
  constructor(
    private readonly base: string,
    private readonly headers: Record<string, string> = {},
  ) {}

  /** The value of a cookie this browser holds, on any path. */
  cookie(name: string): string | undefined {
    return [...this.cookies.values()].find((c) => c.name === name)?.value;
  }

  private cookieHeader(url: URL): string {
    return [...this.cookies.values()]
      .filter((c) => url.pathname.startsWith(c.path))
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }

  private store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const path = attributes.find((a) => /^path=/i.test(a))?.slice(5) || '/';
      const gone = !value || attributes.some((a) => /^expires=Thu, 01 Jan 1970/i.test(a) || /^max-age=0$/i.test(a));
      if (gone) this.cookies.delete(`${name}|${path}`);
      else this.cookies.set(`${name}|${path}`, { name, value, path });
    }
  }

  async request(target: string, init: { method?: string; form?: Record<string, string | string[]> } = {}): Promise<Response> {
    const url = new URL(target, this.base);
    const headers: Record<string, string> = { ...this.headers, cookie: this.cookieHeader(url), accept: 'text/html' };
    let body: string | undefined;
    if (init.form) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(init.form)) for (const v of [value].flat()) params.append(key, v);
      body = params.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const response = await fetch(url, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    this.store(response);
    return response;
  }

  /** Follows redirects on this server; stops at a page, or at a redirect that leaves it (the client's callback). */
  async follow(target: string, init: { form?: Record<string, string | string[]> } = {}): Promise<Step> {
    let response = await this.request(target, init);
    for (let hops = 0; hops < 10; hops++) {
      const location = response.headers.get('location');
      if (!location || response.status < 300 || response.status >= 400) break;
      const next = new URL(location, this.base);
      if (next.origin !== new URL(this.base).origin) return { status: response.status, response, callback: next, html: '' };
      response = await this.request(next.href);
    }
    return { status: response.status, response, html: await response.text() };
  }
}

export interface Step {
  status: number;
  response: Response;
  html: string;
  /** Set when the browser was sent to the client's redirect URI. */
  callback?: URL;
}

export function formOf(html: string): { action: string; csrf: string; step: string } {
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  const csrf = csrfIn(html);
  if (!action || !csrf) throw new Error(`no interaction form in:\n${html.slice(0, 2000)}`);
  return { action, csrf, step: action.split('/').pop() ?? '' };
}

export interface AuthorizeOptions {
  clientId: string;
  redirectUri?: string;
  scope?: string;
  resource?: string;
  state?: string;
  codeChallenge: string;
  extra?: Record<string, string>;
}

export function authorizeUrl(issuer: string, o: AuthorizeOptions): string {
  const params = new URLSearchParams({
    client_id: o.clientId,
    redirect_uri: o.redirectUri ?? REDIRECT_URI,
    response_type: 'code',
    code_challenge: o.codeChallenge,
    code_challenge_method: 'S256',
    scope: o.scope ?? 'everything:read',
    state: o.state ?? 'state-1',
    ...(o.resource === '' ? {} : { resource: o.resource ?? new URL(issuer).origin }),
    ...o.extra,
  });
  return `${issuer}/authorize?${params}`;
}

export interface Answers {
  login?: { email: string; password: string };
  /** Reuse a browser (its session cookie) from an earlier authorization. */
  browser?: Browser;
  /** Site id to pick when asked. */
  site?: number;
  /** Scopes to tick on the consent page (all requested ones when absent). */
  approve?: string[];
  decision?: 'approve' | 'deny';
}

/** Drives the interaction pages to the end: returns the callback URL (or the last page if it stops). */
export async function completeInteraction(browser: Browser, start: string, answers: Answers): Promise<Step> {
  let step = await browser.follow(start);
  for (let i = 0; i < 5 && !step.callback && step.status === 200; i++) {
    const form = formOf(step.html);
    const decision = answers.decision ?? 'approve';
    const fields: Record<string, string | string[]> = { csrf: form.csrf, decision };
    if (form.step === 'login') Object.assign(fields, { email: answers.login?.email ?? '', password: answers.login?.password ?? '' });
    if (form.step === 'select_site') fields.site = String(answers.site ?? /name="site" value="(\d+)"/.exec(step.html)?.[1]);
    if (form.step === 'consent')
      fields.scope = answers.approve ?? [...step.html.matchAll(/name="scope" value="([^"]+)"/g)].map((m) => m[1]!);
    step = await browser.follow(form.action, { form: fields });
  }
  return step;
}

/** One sign-in on a fresh authorization, as a browser with these extra headers: the login page's answer. */
export async function signIn(a: OAuthServer, email: string, password: string, headers: Record<string, string> = {}): Promise<Step> {
  const browser = new Browser(a.base, headers);
  const { challenge } = await pkcePair();
  const page = await browser.follow(authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge }));
  const form = formOf(page.html);
  return browser.follow(form.action, { form: { csrf: form.csrf, decision: 'approve', email, password } });
}

export async function pkcePair() {
  const verifier = oauth.generateRandomCodeVerifier();
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier) };
}

/** A form POST to the token endpoint, as a client would send it. */
export async function tokenRequest(issuer: string, form: Record<string, string>) {
  const response = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

/** Authorizes with the owner's credentials: the code, its verifier and the browser that got it. */
export async function authorizeCode(a: OAuthServer, answers: Answers & { scope?: string; state?: string; resource?: string } = {}) {
  const { verifier, challenge } = await pkcePair();
  const browser = answers.browser ?? new Browser(a.base);
  const { scope, state, resource } = answers;
  const url = authorizeUrl(a.issuer, { clientId: a.clientId, scope, state, resource, codeChallenge: challenge });
  const step = await completeInteraction(browser, url, { login: a.owner, site: a.site.siteId, ...answers });
  const code = step.callback?.searchParams.get('code');
  if (!code) throw new Error(`no code: ${step.status} ${step.callback ?? step.html.slice(0, 500)}`);
  return { code, verifier, browser, callback: step.callback! };
}

export function exchangeCode(a: OAuthServer, code: string, verifier: string, extra: Record<string, string> = {}) {
  return tokenRequest(a.issuer, {
    grant_type: 'authorization_code',
    client_id: a.clientId,
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
    ...extra,
  });
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  scope: string;
}

/** Authorizes and exchanges the code: the usual start of a test. */
export async function connect(a: OAuthServer, answers: Answers & { scope?: string; resource?: string } = {}) {
  const { code, verifier, browser } = await authorizeCode(a, answers);
  const response = await exchangeCode(a, code, verifier);
  if (response.status !== 200) throw new Error(`exchange failed: ${JSON.stringify(response.body)}`);
  return { browser, tokens: response.body as unknown as Tokens, response };
}
