import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

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
