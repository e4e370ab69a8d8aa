import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { testConfig } from '../src/config.js';
import { seedDemo } from '../src/demo/seed.js';
import { DEMO_CLIENT_ID, DOCS_REDIRECT_PATH } from '../src/oauth/clients/client.service.js';
import { launchChromium, SCREENSHOTS } from './browser.js';
import { buildTestApp, CHANGE_LOG, createTestDatabase, tempDir } from './helpers.js';
import { freePort } from './server-process.js';

test('in Chromium: /docs renders every page and blog operation from the OpenAPI document', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const { app } = await buildTestApp(t);
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const refused: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) refused.push(message.text());
  });
  const response = await page.goto(`${address}/docs`);
  const headers = (await response?.allHeaders()) ?? {};
  assert.match(headers['content-security-policy'] ?? '', /frame-ancestors 'none'/);
  assert.match(headers['content-security-policy'] ?? '', /script-src 'self'(;|$)/, 'no inline or foreign script');
  assert.equal(headers['x-frame-options'], 'DENY');
  assert.equal(headers['x-content-type-options'], 'nosniff');
  await page.locator('.opblock').first().waitFor();
  const operations = await page.locator('.opblock-summary-path').allTextContents();
  for (const expected of ['/api/page', '/api/page/{id}', '/api/blog', '/api/blog/{id}']) {
    assert.ok(
      operations.some((o) => o.replace(/\u200b/g, '') === expected),
      `${expected} in ${operations.join(', ')}`,
    );
  }
  assert.equal(await page.locator('.errors-wrapper').count(), 0, 'the document renders without schema errors');
  assert.deepEqual(refused, [], 'the page needs nothing its policy refuses');
  // Every file the page loads carries the same rules (a script or stylesheet opened on its own).
  const script = await fetch(`${address}/docs/static/swagger-initializer.js`);
  assert.equal(script.status, 200);
  assert.equal(script.headers.get('x-content-type-options'), 'nosniff');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'docs.png') });
});

test('in Chromium: /docs Authorize runs PKCE with the demo client, and Try it out calls GET /api/page with the token', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  // The demo as a first start makes it: its website, owner and client, before the app is built.
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const db = await createTestDatabase(t);
  const password = 'correct horse battery';
  const demo = await seedDemo(db.kysely, CHANGE_LOG, testConfig({ publicUrl: base, dataDir: await tempDir(t) }), { password });
  if (!demo) throw new Error('the empty database got no demo');
  assert.ok(demo.oauthClient.redirectUris.includes(`${base}${DOCS_REDIRECT_PATH}`));
  const { app } = await buildTestApp(t, { db, config: { publicUrl: base, demo: true } });
  await app.listen({ host: '127.0.0.1', port });

  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const requested: URL[] = [];
  page.context().on('request', (request) => requested.push(new URL(request.url())));
  await page.goto(`${base}/docs`);
  await page.locator('.btn.authorize').click();
  const dialog = page.locator('.auth-container').filter({ hasText: 'oauth2' });
  assert.equal(await dialog.locator('input[data-name="clientId"]').inputValue(), DEMO_CLIENT_ID);
  assert.equal(
    await dialog.locator('input[type="password"], [id^="client_secret_"]').filter({ visible: true }).count(),
    0,
    'no client secret to type',
  );
  assert.ok(await dialog.locator('input[type="checkbox"][data-value="everything:read"]').isChecked(), 'the read scope is chosen');
  await dialog.screenshot({ path: path.join(SCREENSHOTS, 'docs-authorize-1-dialog.png') });
  const [popup] = await Promise.all([page.waitForEvent('popup'), dialog.locator('button.modal-btn', { hasText: /^Authorize$/ }).click()]);
  await popup.getByLabel('E-mail address').waitFor();
  const authorize = new URL(String(requested.find((url) => url.pathname === '/api/auth/authorize')));
  assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(authorize.searchParams.get('resource'), base);
  await popup.getByLabel('E-mail address').fill(demo.owner.email);
  await popup.getByLabel('Password').fill(password);
  await popup.getByRole('button', { name: 'Sign in' }).click();
  // The wait for the close begins before the click: the pop-up may close before the click's own
  // promise resolves, and a close already past is never seen by a wait begun after it.
  const closed = popup.waitForEvent('close');
  await popup
    .getByRole('button', { name: 'Allow' })
    .click()
    // A pop-up that closed while the click was being confirmed did what is asked.
    .catch((error: Error) => {
      if (!popup.isClosed()) throw error;
    });
  await closed.catch(async (error: Error) => {
    // Where the pop-up stopped instead of closing, for the failure's message.
    await popup.screenshot({ path: path.join(SCREENSHOTS, 'docs-authorize-popup-stuck.png') }).catch(() => undefined);
    const text =
      (await popup
        .locator('body')
        .textContent({ timeout: 5_000 })
        .catch(() => '(no text)')) ?? '(no text)';
    throw new Error(`the pop-up did not close; it shows ${popup.url()}:\n${text.slice(0, 2000)}`, { cause: error });
  });

  // Authorized: the dialog offers to log out instead, and the token goes with every call.
  await dialog.locator('button.modal-btn', { hasText: /^Logout$/ }).waitFor();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'docs-authorize-2-authorized.png') });
  await page.locator('.btn-done').first().click();
  const operation = page.locator('#operations-pages-listPages');
  await operation.locator('.opblock-summary').click();
  await operation.getByRole('button', { name: 'Try it out' }).click();
  const [response] = await Promise.all([
    page.waitForResponse((r) => new URL(r.url()).pathname === '/api/page'),
    operation.getByRole('button', { name: 'Execute' }).click(),
  ]);
  assert.equal(response.status(), 200);
  assert.match(String((await response.request().allHeaders()).authorization), /^Bearer /);
  await operation.locator('.live-responses-table tr.response .response-col_status').first().waitFor();
  assert.equal((await operation.locator('.live-responses-table tr.response .response-col_status').first().textContent())?.trim(), '200');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'docs-authorize-3-try.png') });
});
