import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { listConnections } from '../src/oauth/connections/connection.service.js';
import { launchChromium, SCREENSHOTS } from './browser.js';
import { authorizeUrl, exchangeCode, pkcePair, REDIRECT_URI, startOAuthApp } from './oauth.helpers.js';

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
