import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type DemoCredentials, demoBanner } from '../src/demo/credentials.js';
import { form, image } from './blog-fixtures.js';
import { authorizeUrl, Browser, completeInteraction, formOf, pkcePair, tokenRequest } from './oauth.helpers.js';
import { basic, listening, start } from './server-process.js';

const HELPERS = fileURLToPath(new URL('./oauth.helpers.js', import.meta.url));

// Runs in a child process, because pino writes straight to file descriptor 1. Every log line of
// a whole flow (trace level, plus oidc-provider's debug output) is then searched for the secrets.
const SCRIPT = `
import { writeFileSync } from 'node:fs';
const h = await import(process.env.HELPERS_URL);
const cleanups = [];
const a = await h.startOAuthApp({ after: (fn) => cleanups.push(fn) }, { config: { logLevel: 'trace' } });
const wrong = 'Wrong-Password-' + Math.random().toString(36).slice(2);
const { challenge } = await h.pkcePair();
const browser = new h.Browser(a.base);
const login = await browser.follow(h.authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge }));
const form = h.formOf(login.html);
await browser.follow(form.action, { form: { csrf: form.csrf, decision: 'approve', email: a.owner.email, password: wrong } });
const { code, verifier } = await h.authorizeCode(a);
const tokens = (await h.exchangeCode(a, code, verifier)).body;
const refreshed = (await h.tokenRequest(a.issuer, { grant_type: 'refresh_token', client_id: a.clientId, refresh_token: tokens.refresh_token })).body;
await fetch(a.base + '/api/page', { headers: { authorization: 'Bearer ' + refreshed.access_token } });
await fetch(a.base + '/api/page?access_token=' + refreshed.access_token);
await h.tokenRequest(a.issuer, { grant_type: 'refresh_token', client_id: a.clientId, refresh_token: tokens.refresh_token });
writeFileSync(process.env.SECRETS_FILE, JSON.stringify({
  secrets: [code, verifier, tokens.access_token, tokens.refresh_token, refreshed.access_token, refreshed.refresh_token, a.owner.password, wrong],
}));
for (const fn of cleanups.reverse()) await fn();
`;

test('codes, tokens, verifiers and passwords never reach the logs', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'oauth-logs-'));
  const secretsFile = path.join(dir, 'secrets.json');
  const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], {
    env: { ...process.env, HELPERS_URL: new URL(`file://${HELPERS}`).href, SECRETS_FILE: secretsFile, DEBUG: 'oidc-provider:*' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const exitCode = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(exitCode, 0, output.slice(-3000));
  const lines = output.split('\n').filter((line) => line.startsWith('{'));
  assert.ok(lines.length > 20, 'the run logged its requests');
  assert.ok(output.includes('/api/auth/token'), 'token requests are in the log');
  const { secrets } = JSON.parse(readFileSync(secretsFile, 'utf8')) as { secrets: string[] };
  for (const secret of secrets) {
    assert.ok(secret && secret.length >= 8);
    assert.ok(!output.includes(secret), `a secret (${secret.slice(0, 4)}…) appears in the output`);
  }
});

/** POST /api/blog with an image, as multipart, on the real server. */
async function uploadBlog(base: string, authorization: string, pageId: number, title: string): Promise<number> {
  const body = await form([
    ['data', JSON.stringify({ page: pageId, info_title: title })],
    ['uploadPrimaryImage', { file: await image('png'), filename: 'cover.png', type: 'image/png' }],
  ]);
  const response = await fetch(`${base}/api/blog`, { method: 'POST', headers: { authorization, ...body.headers }, body: body.payload });
  return response.status;
}

// The whole process as `npm start` runs it, at trace with oidc-provider's debug output on: the
// demo print is the one place its secrets may appear; every log line after it is searched.
test('the real server at trace logs no API key, token, code, verifier or password', async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-secrets-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const server = await start(t, { DATA_DIR: dataDir, LOG_LEVEL: 'trace', DEBUG: 'oidc-provider:*' });
  await listening(server);
  const file = path.join(dataDir, 'demo-credentials.json');
  const demo = JSON.parse(await readFile(file, 'utf8')) as DemoCredentials;
  const { base } = server;
  const issuer = `${base}/api/auth`;
  const nonce = () => Math.random().toString(36).slice(2);

  const wrongKey = `sk_wrong${nonce()}${nonce()}`;
  const page = await fetch(`${base}/api/page?pageSize=1`, { headers: { authorization: basic(demo) } });
  const pageId = ((await page.json()) as { data: Array<{ page: number }> }).data[0]!.page;
  assert.equal((await fetch(`${base}/api/page`, { headers: { 'x-api-id': demo.apiId, 'x-api-key': demo.apiKey } })).status, 200);
  assert.equal((await fetch(`${base}/api/page`, { headers: { 'x-api-id': demo.apiId, 'x-api-key': wrongKey } })).status, 401);
  assert.equal(await uploadBlog(base, basic(demo), pageId, 'With an API key'), 201);

  const { clientId, redirectUris } = demo.oauthClient;
  const redirectUri = redirectUris[0]!;
  const wrongPassword = `Wrong-Password-${nonce()}`;
  const { verifier, challenge } = await pkcePair();
  const authorize = authorizeUrl(issuer, { clientId, redirectUri, codeChallenge: challenge, scope: 'everything:write' });
  const browser = new Browser(base);
  const login = formOf((await browser.follow(authorize)).html);
  await browser.follow(login.action, { form: { csrf: login.csrf, decision: 'approve', email: demo.owner.email, password: wrongPassword } });
  const step = await completeInteraction(browser, authorize, { login: demo.owner, site: demo.siteId });
  const code = step.callback?.searchParams.get('code') ?? '';
  const exchange = { grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: redirectUri, code_verifier: verifier };
  const tokens = (await tokenRequest(issuer, exchange)).body as Record<string, string>;
  const refresh = { grant_type: 'refresh_token', client_id: clientId, refresh_token: tokens.refresh_token! };
  const refreshed = (await tokenRequest(issuer, refresh)).body as Record<string, string>;
  assert.equal(await uploadBlog(base, `Bearer ${refreshed.access_token}`, pageId, 'With a token'), 201);
  await fetch(`${base}/api/page?access_token=${refreshed.access_token}`);
  await tokenRequest(issuer, refresh);

  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exit, { code: 0, signal: null });
  const banner = demoBanner(demo, file);
  assert.ok(server.output().includes(banner), 'the first start printed its credentials');
  const logged = server.output().replace(banner, '');
  assert.match(logged, /Providing options to busboy/, 'the multipart trace line ran');
  assert.match(logged, /\/api\/auth\/token/, 'token requests are in the log');
  const secrets = [
    demo.apiKey,
    basic(demo).slice('Basic '.length),
    wrongKey,
    demo.owner.password,
    wrongPassword,
    code,
    verifier,
    tokens.access_token,
    tokens.refresh_token,
    refreshed.access_token,
    refreshed.refresh_token,
  ];
  for (const secret of secrets) {
    assert.ok(secret && secret.length >= 8, 'each secret was obtained');
    assert.ok(!logged.includes(secret), `a secret (${secret.slice(0, 4)}…) appears in the output`);
  }
});
