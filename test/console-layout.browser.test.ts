import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { testConfig } from '../src/config.js';
import { SYSTEM_ACTOR } from '../src/content/history/change-log.js';
import { savePage } from '../src/content/pages/page.service.js';
import { deliveryGuard } from '../src/webhooks/webhook.guard.js';
import { createWebhook } from '../src/webhooks/webhook.service.js';
import { launchChromium, SCREENSHOTS } from './browser.js';
import { CHANGE_LOG } from './helpers.js';
import { connect, startOAuthApp } from './oauth.helpers.js';

/**
 * The desktop and the phone widths every page is looked at. LAYOUT_SCREENSHOTS=1 also saves each
 * page at each width in test-output/screenshots/layout-*.png, to look at them.
 */
const WIDTHS = [1280, 390] as const;

/**
 * What looks broken, read from the page's boxes: sideways scrolling, and within a form a control,
 * its label, its hint or a button drawn over the next one (an unstyled control sized by its
 * content overlapped the hint below it).
 */
async function layoutFaults(page: Page): Promise<string[]> {
  // Run in the page (a string: this project compiles without the DOM's types).
  return page.evaluate(`(() => {
    const faults = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth) faults.push('scrolls sideways by ' + (root.scrollWidth - root.clientWidth) + ' px');
    const describe = (element) =>
      element.tagName.toLowerCase() + (element.id ? '#' + element.id : '') + (element.className ? '.' + String(element.className).split(' ')[0] : '');
    for (const form of document.querySelectorAll('form')) {
      const parts = [...form.querySelectorAll('label, input:not([type=hidden]), select, textarea, .hint, button')].filter(
        (element) => element.offsetParent !== null,
      );
      for (let i = 0; i + 1 < parts.length; i++) {
        const a = parts[i].getBoundingClientRect();
        const b = parts[i + 1].getBoundingClientRect();
        // Side by side on one line is a layout; one drawn over the other is not.
        const overlapX = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const overlapY = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (overlapX > 1 && overlapY > 1 && !parts[i].contains(parts[i + 1]) && !parts[i + 1].contains(parts[i])) {
          faults.push(describe(parts[i]) + ' overlaps ' + describe(parts[i + 1]));
        }
      }
    }
    for (const control of document.querySelectorAll('input:not([type=hidden]):not([type=checkbox]):not([type=radio]), select, textarea')) {
      const box = control.getBoundingClientRect();
      if (box.width > 0 && box.right > root.clientWidth) faults.push(describe(control) + ' reaches past the window');
    }
    return faults;
  })()`);
}

test('in Chromium at 1280 and 390 px: every console page, the front door, /try and the sign-in lay out without overlap or sideways scrolling', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const a = await startOAuthApp(t, {
    twoSites: false,
    config: { webhooks: { ...testConfig().webhooks, allowPrivateTargets: true } },
  });
  await connect(a, { site: a.site.siteId });
  const about = await savePage(
    a.db.kysely,
    CHANGE_LOG,
    a.site.siteId,
    { page_usertitle: 'About us', page_parent: 0, page_order: 1 },
    SYSTEM_ACTOR,
  );
  await savePage(
    a.db.kysely,
    CHANGE_LOG,
    a.site.siteId,
    { page_usertitle: 'Our team', page_parent: about.record.page, page_order: 1 },
    SYSTEM_ACTOR,
  );
  const hook = await createWebhook(a.db.kysely, deliveryGuard(a.config.webhooks), a.site.siteId, {
    url: 'http://127.0.0.1:9/hook',
    events: ['*'],
    description: 'Build on every change',
  });
  const site = `/console/sites/${a.site.siteId}`;
  const signedOut = ['/', '/try', '/console/login'];
  const signedIn = [
    '/console',
    site,
    `${site}/credentials`,
    `${site}/pages`,
    `${site}/history/page/${about.record.page}`,
    `${site}/webhooks`,
    `${site}/webhooks/${hook.id}`,
    `${site}/webhooks/${hook.id}/edit`,
    `${site}/applications/${encodeURIComponent(a.clientId)}/revoke`,
    '/console/clients',
    `/console/clients/${encodeURIComponent(a.clientId)}`,
    '/console/account',
    '/console/no-such-page',
  ];

  const faults: string[] = [];
  for (const width of WIDTHS) {
    const context = await browser.newContext({ viewport: { width, height: 800 } });
    const page = await context.newPage();
    const look = async (url: string) => {
      const response = await page.goto(`${a.base}${url}`);
      assert.ok(response, url);
      for (const fault of await layoutFaults(page)) faults.push(`${url} at ${width} px: ${fault}`);
      if (process.env.LAYOUT_SCREENSHOTS) {
        const name = url.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '') || 'home';
        await page.screenshot({ path: path.join(SCREENSHOTS, `layout-${width}-${name}.png`), fullPage: true });
      }
    };
    for (const url of signedOut) await look(url);
    await page.getByLabel('E-mail address').fill(a.owner.email);
    await page.getByLabel('Password').fill(a.owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Your websites' }).waitFor();
    for (const url of signedIn) await look(url);
    await context.close();
  }
  assert.deepEqual(faults, []);
});
