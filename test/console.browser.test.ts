import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { testConfig } from '../src/config.js';
import { SYSTEM_ACTOR } from '../src/content/history/change-log.js';
import { savePage } from '../src/content/pages/page.service.js';
import { formatTimestamp } from '../src/db/time.js';
import { createDemoClient, demoRedirectUris } from '../src/oauth/clients/client.service.js';
import { listConnections } from '../src/oauth/connections/connection.service.js';
import { deliveryGuard } from '../src/webhooks/webhook.guard.js';
import { createWebhook } from '../src/webhooks/webhook.service.js';
import { launchChromium, SCREENSHOTS } from './browser.js';
import { CHANGE_LOG } from './helpers.js';
import { connect, exchangeCode, type OAuthTestApp, startOAuthApp, tokenRequest } from './oauth.helpers.js';
import { webhookReceiver } from './webhook-receiver.js';

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `console-${name}.png`), fullPage: true });

async function signIn(page: Page, a: OAuthTestApp) {
  await page.goto(`${a.base}/console`);
  await page.getByLabel('E-mail address').fill(a.owner.email);
  await page.getByLabel('Password').fill(a.owner.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Your websites' }).waitFor();
}

async function addPages(a: OAuthTestApp) {
  const home = await savePage(
    a.db.kysely,
    CHANGE_LOG,
    a.site.siteId,
    { page_usertitle: 'Home', page_menuname: 'Home', page_parent: 0, page_order: 1 },
    SYSTEM_ACTOR,
  );
  const about = await savePage(
    a.db.kysely,
    CHANGE_LOG,
    a.site.siteId,
    { page_usertitle: 'About us', page_parent: 0, page_order: 2 },
    SYSTEM_ACTOR,
  );
  await savePage(
    a.db.kysely,
    CHANGE_LOG,
    a.site.siteId,
    { page_usertitle: 'Our team', page_parent: about.record.page, page_order: 1 },
    SYSTEM_ACTOR,
  );
  await savePage(
    a.db.kysely,
    CHANGE_LOG,
    a.site.siteId,
    { page_usertitle: 'History', page_parent: about.record.page, page_order: 2, page_privacy: 1 },
    SYSTEM_ACTOR,
  );
  return home.record.page;
}

const api = (a: OAuthTestApp, headers: Record<string, string>) => fetch(`${a.base}/api/page`, { headers });

/** Webhook targets on 127.0.0.1 allowed, for a local receiver. */
const privateHooks = { webhooks: { ...testConfig().webhooks, allowPrivateTargets: true, pollMs: 20 } };

test('in Chromium: sign in, see two websites, revoke the application on one; its token gets 401, the other website’s still works', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const a = await startOAuthApp(t);
  const first = await connect(a, { site: a.site.siteId, scope: 'everything:read order:read' });
  const second = await connect(a, { site: a.site2.siteId });
  const page = await browser.newPage({ viewport: { width: 1000, height: 760 } });

  await page.goto(`${a.base}/console`);
  await page.getByLabel('E-mail address').fill(a.owner.email);
  await shot(page, '1-sign-in');
  await signIn(page, a);
  await page.getByRole('link', { name: /Test site/ }).waitFor();
  await page.getByRole('link', { name: /Second site/ }).waitFor();
  await shot(page, '2-websites');

  await page.getByRole('link', { name: /Test site/ }).click();
  await page.getByRole('heading', { name: 'Connected applications' }).waitFor();
  await shot(page, '3-connections');
  await page.getByRole('link', { name: 'Revoke Test app' }).click();
  await page.getByRole('heading', { name: 'Revoke \u2068Test app\u2069?' }).waitFor();
  await shot(page, '4-revoke-confirm');
  await page.getByRole('button', { name: 'Revoke access' }).click();
  await page.getByRole('status').waitFor();
  assert.match(String(await page.getByRole('status').textContent()), /revoked/);
  await shot(page, '5-revoked');

  assert.equal((await api(a, { authorization: `Bearer ${first.tokens.access_token}` })).status, 401);
  assert.equal((await api(a, { authorization: `Bearer ${second.tokens.access_token}` })).status, 200);
  const refreshed = await tokenRequest(a.issuer, {
    grant_type: 'refresh_token',
    client_id: a.clientId,
    refresh_token: first.tokens.refresh_token,
  });
  assert.equal(refreshed.status, 400, 'the refresh token ended with it');
  assert.equal((await listConnections(a.db.kysely, a.site2.siteId))[0]?.status, 'active');

  // Phone width: the same page, nothing cut off.
  await page.setViewportSize({ width: 375, height: 760 });
  await page.reload();
  const overflow = Number(await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'));
  assert.ok(overflow <= 0, `no sideways scrolling at 375 px (${overflow} px too wide)`);
  await shot(page, '6-phone');
});

test('in Chromium: create an API key, copy it, and use it over HTTP; then revoke it', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const a = await startOAuthApp(t);
  await addPages(a);
  const context = await browser.newContext({ viewport: { width: 1000, height: 760 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: a.base });
  const page = await context.newPage();
  await signIn(page, a);
  await page.goto(`${a.base}/console/sites/${a.site.siteId}/credentials`);
  await page.getByLabel('Label').fill('Build server');
  await page.getByRole('button', { name: 'Create credential' }).click();
  await page.getByRole('heading', { name: /New credential/ }).waitFor();
  const apiId = String(await page.locator('#new-api-id').textContent());
  const apiKey = String(await page.locator('#new-api-key').textContent());
  await page.locator('[data-copy="new-api-key"]').click();
  assert.equal(await page.evaluate('navigator.clipboard.readText()'), apiKey);
  await shot(page, '7-credential-created');

  const basic = { authorization: `Basic ${Buffer.from(`${apiId}:${apiKey}`).toString('base64')}` };
  const response = await api(a, basic);
  assert.equal(response.status, 200);
  assert.equal(((await response.json()) as { meta: { total: number } }).meta.total, 4);

  await page.reload();
  assert.equal(await page.locator('#new-api-key').count(), 0, 'the key is shown once');
  await page.getByRole('link', { name: 'Revoke Build server' }).click();
  await page.getByRole('button', { name: 'Revoke credential' }).click();
  await page.getByRole('status').waitFor();
  assert.equal((await api(a, basic)).status, 401);

  await page.getByRole('link', { name: 'Pages' }).click();
  await page.getByRole('heading', { name: 'Page tree' }).waitFor();
  await shot(page, '8-pages');
  await page.getByRole('link', { name: 'JSON of Our team' }).click();
  assert.match(String(await page.textContent('body')), /"page_usertitle": "Our team"/);
});

test('in Chromium: add a webhook in the Webhooks tab, copy its secret once, send a test; a disabled hook says why', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const a = await startOAuthApp(t, { config: privateHooks });
  const receiver = await webhookReceiver(t);
  // A hook whose receiver has failed for five days, as the worker leaves it.
  const old = await createWebhook(a.db.kysely, deliveryGuard(a.config.webhooks), a.site.siteId, {
    url: `${receiver.url}/old-build-server`,
    events: ['*'],
    description: 'The old build server',
  });
  await a.db.kysely
    .updateTable('webhooks')
    .set({ status: 'disabled', disabled_reason: 'failing', failing_since: formatTimestamp(new Date(Date.now() - 5 * 86_400_000)) })
    .where('id', '=', old.id)
    .execute();
  const context = await browser.newContext({ viewport: { width: 1000, height: 760 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: a.base });
  const page = await context.newPage();
  await signIn(page, a);
  await page.getByRole('link', { name: /Test site/ }).click();
  await page.getByRole('link', { name: 'Webhooks' }).click();
  await page.getByRole('heading', { name: 'Add a webhook' }).waitFor();
  assert.match(String(await page.locator('.status-note').textContent()), /every delivery attempt failed for 5 days/);

  await page.getByLabel('URL', { exact: true }).fill(receiver.url);
  await page.getByLabel('page.created', { exact: true }).check();
  await page.getByLabel('page.updated', { exact: true }).check();
  await page.getByLabel('Description (optional)').fill('Rebuild the static site');
  await page.getByRole('button', { name: 'Add webhook' }).click();
  await page.getByRole('heading', { name: /New hook:/ }).waitFor();
  const secret = String(await page.locator('#new-webhook-secret').textContent());
  assert.match(secret, /^whsec_/);
  await page.locator('[data-copy="new-webhook-secret"]').click();
  assert.equal(await page.evaluate('navigator.clipboard.readText()'), secret);
  await shot(page, '13-webhooks');

  receiver.trust(secret);
  await page.getByRole('button', { name: `Send a test to ${receiver.url}` }).click();
  await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
  const [received] = await receiver.waitFor(1);
  assert.equal(received!.verified?.type, 'webhook.test', 'signed with the secret the page showed');
  for (let i = 0; i < 100 && (await page.locator('.badge', { hasText: 'delivered' }).count()) === 0; i++) {
    await page.waitForTimeout(50);
    await page.reload();
  }
  assert.match(String(await page.locator('table.attempts').textContent()), /HTTP 200/);
  await shot(page, '14-webhook-deliveries');

  await page.getByRole('link', { name: 'Webhooks' }).first().click();
  await page.getByRole('heading', { name: 'Add a webhook' }).waitFor();
  assert.equal(await page.locator('#new-webhook-secret').count(), 0, 'the secret is shown once');
});

test('in Chromium: register a client, then complete an OAuth flow with it', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const a = await startOAuthApp(t);
  const page = await browser.newPage({ viewport: { width: 1000, height: 760 } });
  await page.route('https://mine.example/**', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>Mine</title><h1>Back in my app</h1>' }),
  );
  await signIn(page, a);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'OAuth clients' }).click();
  await page.getByLabel('Name').fill('My publisher');
  await page.getByLabel('Redirect URIs').fill('http://localhost/nothing\n');
  await page.getByRole('button', { name: 'Register client' }).click();
  await page.getByRole('heading', { name: 'My publisher' }).waitFor();
  const clientId = String(await page.locator('#client-id').textContent());
  assert.match(clientId, /^cl_/);
  // Edit: the redirect URI it will really use.
  await page.getByLabel('Redirect URIs, one a line').fill('https://mine.example/callback');
  await page.getByRole('button', { name: 'Save redirect URIs' }).click();
  await page.getByRole('status').waitFor();
  await shot(page, '9-client');
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'OAuth clients' }).click();
  await shot(page, '10-clients');

  const verifier = 'v'.repeat(50);
  const challenge = Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))).toString('base64url');
  const params = new URLSearchParams({
    client_id: clientId,
    redirect_uri: 'https://mine.example/callback',
    response_type: 'code',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    scope: 'everything:read',
    resource: a.base,
    state: 's1',
  });
  // Signed in already (one session): the flow starts at the website choice.
  await page.goto(`${a.issuer}/authorize?${params}`);
  await page.getByRole('heading', { name: 'Choose a website' }).waitFor();
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByRole('heading', { name: /Allow access to/ }).waitFor();
  assert.equal(await page.locator('.unverified').count(), 0, 'a console client is verified');
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((url) => url.href.startsWith('https://mine.example/callback'));
  const code = String(new URL(page.url()).searchParams.get('code'));
  const tokens = await exchangeCode({ ...a, clientId }, code, verifier, { redirect_uri: 'https://mine.example/callback' });
  assert.equal(tokens.status, 200);
  assert.equal((await api(a, { authorization: `Bearer ${tokens.body.access_token}` })).status, 200);

  // Deleting the client ends its connection.
  await page.goto(`${a.base}/console/clients/${clientId}`);
  await page.getByRole('link', { name: 'Delete client…' }).click();
  await page.getByRole('button', { name: 'Delete client' }).click();
  await page.getByRole('status').waitFor();
  assert.equal((await api(a, { authorization: `Bearer ${tokens.body.access_token}` })).status, 401);
});

test('in Chromium: / and /try run the whole flow with the demo client and list the pages', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const a = await startOAuthApp(t, { twoSites: false });
  await createDemoClient(a.db.kysely, demoRedirectUris(a.base));
  await addPages(a);
  const page = await browser.newPage({ viewport: { width: 1000, height: 760 } });
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  await page.goto(`${a.base}/`);
  await shot(page, '0-home');
  await page.getByRole('link', { name: 'Try the OAuth flow' }).click();
  await page.getByRole('heading', { name: 'Try the OAuth flow' }).waitFor();
  // The button does something once the page's script has run, which the heading does not wait for:
  // on a busy machine the click came first and did nothing.
  await page.waitForLoadState('load');
  await page.getByRole('button', { name: 'Run the flow' }).click();

  await page.getByLabel('E-mail address').fill(a.owner.email);
  await page.getByLabel('Password').fill(a.owner.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: /Allow access to/ }).waitFor();
  await page.getByRole('button', { name: 'Allow' }).click();

  await page.getByRole('heading', { name: "The website's pages" }).waitFor();
  const listed = await page.locator('#pages li').allTextContents();

  assert.equal(listed.length, 4);
  assert.ok(listed.some((item) => item.startsWith('Our team')));
  assert.equal(new URL(page.url()).search, '', 'the code left the address bar');
  assert.equal(await page.locator('.steps li.failed').count(), 0);
  assert.equal(await page.locator('.steps li.done').count(), 6);
  await shot(page, '11-try');
  assert.deepEqual(errors, []);
  const [connection] = await listConnections(a.db.kysely, a.site.siteId);
  assert.equal(connection?.client_id, 'demo-client');
});

test('in Chromium at 375 px: the longest website name, credential label and client name wrap; nothing scrolls sideways', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const a = await startOAuthApp(t, { twoSites: false, config: privateHooks });
  const hook = await createWebhook(a.db.kysely, deliveryGuard(a.config.webhooks), a.site.siteId, {
    url: `http://127.0.0.1:9/${'h'.repeat(300)}`,
    events: ['*'],
    description: 'D'.repeat(500),
  });
  // The longest each may be, in one unbreakable word.
  const long = (letter: string) => letter.repeat(100);
  await a.db.kysely
    .updateTable('sites')
    .set({ name: long('S') })
    .where('id', '=', a.site.siteId)
    .execute();
  const page = await browser.newPage({ viewport: { width: 375, height: 760 } });
  await signIn(page, a);
  await page.goto(`${a.base}/console/sites/${a.site.siteId}/credentials`);
  await page.getByLabel('Label').fill(long('L'));
  await page.getByRole('button', { name: 'Create credential' }).click();
  await page.getByRole('heading', { name: /New credential/ }).waitFor();
  await page.goto(`${a.base}/console/clients`);
  await page.getByLabel('Name').fill(long('C'));
  await page.getByLabel('Redirect URIs').fill('https://app.example/callback');
  await page.getByRole('button', { name: 'Register client' }).click();
  await page.getByRole('heading', { name: long('C') }).waitFor();
  const site = `/console/sites/${a.site.siteId}`;
  for (const path of ['/console', '/console/clients', site, `${site}/webhooks`, `${site}/webhooks/${hook.id}`, `${site}/credentials`]) {
    await page.goto(`${a.base}${path}`);
    const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
    assert.ok(width <= 375, `${path}: ${width} px wide at 375 px`);
  }
  await shot(page, '12-phone-long-names');
});

test('in Chromium: /try marks no step from an answer whose state is not the one it stored', async (t) => {
  const browser = await launchChromium(t);
  if (!browser) return;
  const a = await startOAuthApp(t, { twoSites: false });
  await createDemoClient(a.db.kysely, demoRedirectUris(a.base));
  const page = await browser.newPage({ viewport: { width: 1000, height: 760 } });
  const marks = () => page.locator('.steps li').evaluateAll((items) => items.map((item) => `${item.id}:${item.className}`));
  const issuer = encodeURIComponent(a.issuer);
  // What the page stores when it starts a flow in this tab.
  const started = `sessionStorage.setItem('try-flow', JSON.stringify({ verifier: 'v', state: 'mine' }))`;

  // A stale answer: this tab started no flow.
  await page.goto(`${a.base}/try?code=abc&state=xyz&iss=${issuer}`);
  await page.locator('#step-callback.failed').waitFor();
  assert.deepEqual(await marks(), ['step-pkce:', 'step-authorize:', 'step-consent:', 'step-callback:failed', 'step-token:', 'step-api:']);

  // A foreign error: not the state this tab stored, so not shown as the answer to its request.
  await page.evaluate(started);
  await page.goto(`${a.base}/try?error=access_denied&error_description=forged&state=theirs&iss=${issuer}`);
  await page.locator('#step-callback.failed').waitFor();
  assert.equal(await page.locator('.steps li.done').count(), 0);
  assert.doesNotMatch(String(await page.locator('#step-consent').textContent()), /access_denied|forged/);

  // The same error answering this tab's own request is shown where it happened.
  await page.evaluate(started);
  await page.goto(`${a.base}/try?error=access_denied&error_description=denied&state=mine&iss=${issuer}`);
  await page.locator('#step-consent.failed').waitFor();
  assert.match(String(await page.locator('#step-consent pre').textContent()), /access_denied: denied/);
  assert.deepEqual((await marks()).slice(0, 4), ['step-pkce:done', 'step-authorize:done', 'step-consent:failed', 'step-callback:']);
});
