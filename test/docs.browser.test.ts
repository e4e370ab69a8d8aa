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
  await page.goto(`${address}/docs`);
  await page.locator('.opblock').first().waitFor();
  const operations = await page.locator('.opblock-summary-path').allTextContents();
  for (const expected of ['/api/page', '/api/page/{id}', '/api/blog', '/api/blog/{id}']) {
    assert.ok(
      operations.some((o) => o.replace(/\u200b/g, '') === expected),
      `${expected} in ${operations.join(', ')}`,
    );
  }
  assert.equal(await page.locator('.errors-wrapper').count(), 0, 'the document renders without schema errors');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'docs.png') });
});
