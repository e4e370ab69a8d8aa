import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { listConnections } from '../src/oauth/connections/connection.service.js';
import { launchChromium, SCREENSHOTS } from './browser.js';
import { authorizeUrl, consoleLogin, exchangeCode, pkcePair, REDIRECT_URI, startOAuthApp } from './oauth.helpers.js';

test('in Chromium: log in, pick one of two websites, approve one of two scopes, land on the redirect URI', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const a = await startOAuthApp(t);
  const page = await browser.newPage({ viewport: { width: 800, height: 760 } });
  // The client's redirect URI does not exist; the browser shows a stand-in page instead.
  await page.route('https://app.example/**', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>Test app</title><h1>Back in the test app</h1>' }),
  );
  const { verifier, challenge } = await pkcePair();
  await page.goto(
    authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge, scope: 'everything:read order:read', state: 'browser-1' }),
  );

  await page.getByLabel('E-mail address').fill(a.owner.email);
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').waitFor();
  assert.match(String(await page.getByRole('alert').textContent()), /not correct/);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'oauth-1-login-error.png'), fullPage: true });

  await page.getByLabel('Password').fill(a.owner.password);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'oauth-2-login.png'), fullPage: true });
  await page.getByRole('button', { name: 'Sign in' }).click();

  await page.getByRole('heading', { name: 'Choose a website' }).waitFor();
  await page.getByLabel(/Second site/).check();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'oauth-3-choose-website.png'), fullPage: true });
  await page.getByRole('button', { name: 'Continue' }).click();

  await page.getByRole('heading', { name: 'Allow access to Second site?' }).waitFor();
  await page.getByLabel(/Read orders/).uncheck();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'oauth-4-consent.png'), fullPage: true });
  await page.getByRole('button', { name: 'Allow' }).click();

  await page.waitForURL((url) => url.href.startsWith(REDIRECT_URI));
  await page.screenshot({ path: path.join(SCREENSHOTS, 'oauth-5-redirected.png'), fullPage: true });
  const callback = new URL(page.url());
  assert.equal(callback.searchParams.get('state'), 'browser-1');
  assert.equal(callback.searchParams.get('iss'), a.issuer);

  const tokens = await exchangeCode(a, String(callback.searchParams.get('code')), verifier);
  assert.equal(tokens.status, 200);
  assert.equal(tokens.body.scope, 'everything:read');
  const [connection] = await listConnections(a.db.kysely, a.site2.siteId);
  assert.deepEqual(connection?.scopes, ['everything:read']);

  // A redirect URI that is not registered exactly: an error page, and the browser stays here.
  const bad = await page.goto(authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge, redirectUri: `${REDIRECT_URI}/` }));
  assert.equal(bad?.status(), 400);
  assert.ok(page.url().startsWith(a.base));
  await page.getByRole('heading', { name: 'This request cannot continue' }).waitFor();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'oauth-6-error.png'), fullPage: true });
});

test('in Chromium: the consent page says each narrow scope in words; the owner grants a subset, and the token and the console hold only that', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const a = await startOAuthApp(t, { twoSites: false });
  const page = await browser.newPage({ viewport: { width: 800, height: 900 } });
  await page.route('https://app.example/**', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>Test app</title><h1>Back in the test app</h1>' }),
  );
  const { verifier, challenge } = await pkcePair();
  const asked = 'pages:read pages:write blogs:read history:read webhooks:manage';
  await page.goto(authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge, scope: asked, state: 'narrow-1' }));
  await page.getByLabel('E-mail address').fill(a.owner.email);
  await page.getByLabel('Password').fill(a.owner.password);
  await page.getByRole('button', { name: 'Sign in' }).click();

  await page.getByRole('heading', { name: /^Allow access to/ }).waitFor();
  const offered = await page.getByRole('checkbox').evaluateAll((boxes) => boxes.map((b) => b.getAttribute('value')));
  assert.deepEqual(offered, asked.split(' '), 'one checkbox per scope asked for, in the order of the scope list');
  // Each said as a website owner reads it, the scope's name beside it.
  for (const words of [
    'Read your website’s pages',
    'Create, change and delete your website’s pages (and read them)',
    'Read your website’s blog articles',
    'See what changed in your pages and blog articles, who changed it, and the earlier versions',
    'Set up, change and remove webhooks',
  ]) {
    await page.getByText(words, { exact: false }).first().waitFor();
  }
  await page.getByRole('checkbox', { name: /Create, change and delete your website’s pages/ }).uncheck();
  await page.getByRole('checkbox', { name: /Set up, change and remove webhooks/ }).uncheck();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'oauth-7-consent-narrow.png'), fullPage: true });
  await page.getByRole('button', { name: 'Allow' }).click();

  await page.waitForURL((url) => url.href.startsWith(REDIRECT_URI));
  const callback = new URL(page.url());
  const tokens = await exchangeCode(a, String(callback.searchParams.get('code')), verifier);
  assert.equal(tokens.status, 200);
  assert.equal(tokens.body.scope, 'pages:read blogs:read history:read', 'only what the owner granted');
  const [connection] = await listConnections(a.db.kysely, a.site.siteId);
  assert.deepEqual(connection?.scopes, ['pages:read', 'blogs:read', 'history:read']);

  const headers = { authorization: `Bearer ${tokens.body.access_token}` };
  assert.equal((await fetch(`${a.base}/api/page`, { headers })).status, 200);
  const write = await fetch(`${a.base}/api/page`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ page_usertitle: 'Not granted' }),
  });
  assert.equal(write.status, 403);
  assert.match(String(write.headers.get('www-authenticate')), /error="insufficient_scope", scope="pages:write"/);
  assert.equal((await fetch(`${a.base}/api/webhooks`, { headers })).status, 403);

  // The owner's console shows the connection with what it was granted, in the same words.
  const console = await consoleLogin(a);
  const html = await (await console.browser.request(`/console/sites/${a.site.siteId}`)).text();
  assert.match(
    html,
    /<dt>Permissions<\/dt><dd>Read your website’s pages, Read your website’s blog articles, See what changed in your pages and blog articles, who changed it, and the earlier versions<\/dd>/,
  );
});
