import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import { createClient } from '../src/oauth/clients/client.service.js';
import { launchChromium, SCREENSHOTS } from './browser.js';
import { startOAuthApp } from './oauth.helpers.js';
import { freePort } from './server-process.js';

/**
 * A single-page app as a developer would write one, with no library: PKCE in the browser, the
 * code redeemed with fetch, then the API called with the token. Everything it reads of the
 * server's answers, it reads through CORS.
 */
function appPage(api: string, clientId: string, redirectUri: string): string {
  const settings = JSON.stringify({ api, clientId, redirectUri });
  return `<!doctype html><meta charset="utf-8"><title>Browser app</title><pre id="result">working</pre>
<script type="module">
const { api, clientId, redirectUri } = ${settings};
const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
const show = (value) => { document.getElementById('result').textContent = JSON.stringify(value); };
const params = new URLSearchParams(location.search);
try {
  if (!params.has('code')) {
    const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
    sessionStorage.setItem('verifier', verifier);
    const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    location.assign(api + '/api/auth/authorize?' + new URLSearchParams({
      client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: 'everything:read',
      code_challenge: challenge, code_challenge_method: 'S256', state: 'spa-1', resource: api,
    }));
  } else {
    const token = await fetch(api + '/api/auth/token', { method: 'POST', body: new URLSearchParams({
      grant_type: 'authorization_code', code: params.get('code'), code_verifier: sessionStorage.getItem('verifier'),
      client_id: clientId, redirect_uri: redirectUri,
    }) });
    const tokens = await token.json();
    const pages = await fetch(api + '/api/page', { headers: { authorization: 'Bearer ' + tokens.access_token } });
    const body = await pages.json();
    const again = await fetch(api + '/api/page', { headers: { authorization: 'Bearer ' + tokens.access_token, 'if-none-match': pages.headers.get('ETag') } });
    show({ token: token.status, state: params.get('state'), status: pages.status, etag: pages.headers.get('ETag'),
      rateLimit: pages.headers.get('RateLimit'), records: body.data.length, revalidated: again.status });
  }
} catch (error) {
  show({ error: String(error) });
}
</script>`;
}

test('in Chromium: an app on another origin runs PKCE, redeems the code with fetch and calls /api/page with the token', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const a = await startOAuthApp(t, { twoSites: false });
  const created = await a.app.inject({ method: 'POST', url: '/api/page', headers: a.site.headers, payload: { page_usertitle: 'Hours' } });
  assert.equal(created.statusCode, 201);
  // localhost, not 127.0.0.1, and another port: another origin on both counts.
  const port = await freePort();
  const origin = `http://localhost:${port}`;
  const redirectUri = `${origin}/callback`;
  const { clientId } = await createClient(a.db.kysely, { name: 'Browser app', redirectUris: [redirectUri] });
  const page = appPage(a.base, clientId, redirectUri);
  const server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const tab = await browser.newPage({ viewport: { width: 800, height: 760 } });
  const refused: string[] = [];
  tab.on('console', (message) => {
    if (/CORS|Access-Control/i.test(message.text())) refused.push(message.text());
  });
  await tab.goto(`${origin}/`);
  await tab.getByLabel('E-mail address').fill(a.owner.email);
  await tab.getByLabel('Password').fill(a.owner.password);
  await tab.getByRole('button', { name: 'Sign in' }).click();
  await tab.getByRole('button', { name: 'Allow' }).click();
  await tab.waitForURL((url) => url.href.startsWith(redirectUri));
  await tab.locator('#result').filter({ hasNotText: 'working' }).waitFor();
  const result = JSON.parse(String(await tab.locator('#result').textContent()));
  await tab.screenshot({ path: path.join(SCREENSHOTS, 'cors-app.png') });
  assert.deepEqual(refused, [], 'the browser refused nothing');
  assert.equal(result.token, 200, JSON.stringify(result));
  assert.equal(result.state, 'spa-1');
  assert.equal(result.status, 200);
  assert.match(result.etag, /^"[^"]+"$/, 'the ETag is exposed to the page');
  assert.match(result.rateLimit, /\d/, 'and so is RateLimit');
  assert.equal(result.records, 1);
  assert.equal(result.revalidated, 304, 'If-None-Match passed the preflight');
});
