import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { type Browser, chromium } from 'playwright-core';

export const SCREENSHOTS = path.resolve('test-output', 'screenshots');

/** Debian's chromium as the machine has it: no downloaded browser builds, no network chatter. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * How long a page's action or wait may take. Playwright's own 30 s only turns a hang into a
 * failure, and on a machine busy with the rest of the suite (other shards, their browsers and
 * servers) a sign-in in a pop-up has taken longer.
 */
const PAGE_LIMIT_MS = 180_000;

function chromiumPath(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Chromium for a browser test, closed after it; undefined (the test skipped) only outside CI when
 * it is not installed. Under CI a missing Chromium fails the test.
 */
export async function launchChromium(t: TestContext): Promise<Browser | undefined> {
  const executablePath = chromiumPath();
  if (!executablePath) {
    assert.ok(!process.env.CI, 'CI is set but chromium is not installed (apt-get install -y chromium)');
    t.skip('chromium is not installed (apt-get install -y chromium)');
    return undefined;
  }
  mkdirSync(SCREENSHOTS, { recursive: true });
  const browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  t.after(() => browser.close());
  // Every page's context gets the limit, pop-ups included: they open in their opener's context.
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (options) => {
    const context = await newContext(options);
    context.setDefaultTimeout(PAGE_LIMIT_MS);
    return context;
  };
  const newPage = browser.newPage.bind(browser);
  browser.newPage = async (options) => {
    const page = await newPage(options);
    page.context().setDefaultTimeout(PAGE_LIMIT_MS);
    return page;
  };
  return browser;
}
