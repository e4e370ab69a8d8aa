import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { launchChromium, SCREENSHOTS } from './browser.js';
import { buildTestApp } from './helpers.js';

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
