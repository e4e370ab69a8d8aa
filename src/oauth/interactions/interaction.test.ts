import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestDatabase, TEST_DATABASE_URL } from '../../../test/helpers.js';
import {
  authorizeCode,
  authorizeUrl,
  Browser,
  completeInteraction,
  connect,
  formOf,
  pkcePair,
  startOAuthApp,
} from '../../../test/oauth.helpers.js';
import { LOGIN_ATTEMPTS } from '../../accounts/sign-in.js';
import { createDatabase } from '../../db/database.js';
import { listConnections } from '../connections/connection.service.js';

async function loginPage(a: Awaited<ReturnType<typeof startOAuthApp>>, browser = new Browser(a.base)) {
  const { challenge } = await pkcePair();
  const step = await browser.follow(
    authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge, scope: 'everything:read product:read' }),
  );
  assert.equal(step.status, 200);
  return { browser, step, form: formOf(step.html) };
}

test('pages are HTML with frame-ancestors none, no referrer, no caching; cookies HttpOnly SameSite=Lax; POST answers 303', async (t) => {
  const a = await startOAuthApp(t);
  const browser = new Browser(a.base);
  const { challenge } = await pkcePair();
  const start = await browser.request(authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge }));
  assert.equal(start.status, 303);
  const cookies = start.headers.getSetCookie();
  assert.ok(cookies.length >= 2);
  for (const cookie of cookies) {
    assert.match(cookie, /httponly/i, cookie);
    assert.match(cookie, /samesite=lax/i, cookie);
    assert.doesNotMatch(cookie, /secure/i, 'plain http in tests: not Secure');
  }
  const page = await browser.request(String(start.headers.get('location')));
  assert.equal(page.status, 200);
  assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.match(String(page.headers.get('content-security-policy')), /frame-ancestors 'none'/);
  assert.match(String(page.headers.get('content-security-policy')), /default-src 'none'/);
  assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
  assert.equal(page.headers.get('cache-control'), 'no-store');
  const form = formOf(await page.text());
  const posted = await browser.request(form.action, {
    form: { csrf: form.csrf, decision: 'approve', email: a.owner.email, password: a.owner.password },
  });
  assert.equal(posted.status, 303);
  assert.equal(posted.headers.get('referrer-policy'), 'no-referrer');
});

test('cookies are Secure behind an HTTPS proxy', async (t) => {
  const a = await startOAuthApp(t, { config: { trustProxy: 1 } });
  const { challenge } = await pkcePair();
  const response = await a.app.inject({
    url: authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge }).slice(a.base.length),
    headers: { 'x-forwarded-proto': 'https' },
  });
  assert.equal(response.statusCode, 303);
  const cookies = [response.headers['set-cookie']].flat().map(String);
  assert.ok(cookies.length >= 2 && cookies.every((c) => /;\s*secure/i.test(c)), cookies.join('\n'));
});

test('a wrong password shows a clear message and keeps the user on the login page', async (t) => {
  const a = await startOAuthApp(t);
  const { browser, form } = await loginPage(a);
  for (const [email, password] of [
    [a.owner.email, 'wrong password'],
    ['nobody@example.com', a.owner.password],
  ]) {
    const step = await browser.follow(form.action, {
      form: { csrf: form.csrf, decision: 'approve', email: String(email), password: String(password) },
    });
    assert.equal(step.status, 400);
    assert.match(step.html, /The e-mail address or password is not correct\./);
    assert.equal(formOf(step.html).step, 'login');
    assert.doesNotMatch(step.html, new RegExp(String(password)), 'the password is not echoed');
  }
});

test('repeated failures are rate limited per e-mail and IP, across two processes on one database', async (t) => {
  const db = await createTestDatabase(t);
  const a = await startOAuthApp(t, { db });
  // A second process: its own app (and, on PostgreSQL, its own connection pool) on the same data.
  const db2 = TEST_DATABASE_URL ? createDatabase(TEST_DATABASE_URL, { schema: db.schema, poolSize: 2 }) : db;
  if (db2 !== db) t.after(() => db2.close());
  const b = await startOAuthApp(t, { db: db2 });
  const wrong = async (app: typeof a, email: string) => {
    const { browser, form } = await loginPage(app);
    return browser.follow(form.action, { form: { csrf: form.csrf, decision: 'approve', email, password: 'wrong password' } });
  };
  for (let i = 0; i < LOGIN_ATTEMPTS; i++) {
    assert.equal((await wrong(i % 2 ? a : b, a.owner.email)).status, 400, `attempt ${i + 1}`);
  }
  const { browser, form } = await loginPage(a);
  const blocked = await browser.follow(form.action, {
    form: { csrf: form.csrf, decision: 'approve', email: a.owner.email, password: a.owner.password },
  });
  assert.equal(blocked.status, 429, 'even the right password waits');
  assert.match(blocked.html, /Too many failed sign-in attempts\. Try again in 15 minutes\./);
  assert.ok(Number(blocked.response.headers.get('retry-after')) > 0);
  assert.equal((await wrong(b, a.owner.email)).status, 429, 'the other process agrees');
  assert.equal((await wrong(b, b.owner.email)).status, 400, 'another e-mail address is not blocked');
});

test('the CSRF token is required and bound to the interaction', async (t) => {
  const a = await startOAuthApp(t);
  const first = await loginPage(a);
  const second = await loginPage(a, first.browser);
  const credentials = { decision: 'approve', email: a.owner.email, password: a.owner.password };
  for (const csrf of [undefined, '', 'forged', first.form.csrf]) {
    const response = await second.browser.request(second.form.action, {
      form: { ...credentials, ...(csrf === undefined ? {} : { csrf }) },
    });
    assert.equal(response.status, 403, String(csrf));
    assert.match(await response.text(), /This form has expired/);
  }
  const ok = await second.browser.request(second.form.action, { form: { ...credentials, csrf: second.form.csrf } });
  assert.equal(ok.status, 303);
});

test('a form posted without the interaction cookie is the 400 expired page, and the sign-in it names goes on', async (t) => {
  const a = await startOAuthApp(t);
  const { browser, form } = await loginPage(a);
  const credentials = { csrf: form.csrf, decision: 'approve', email: a.owner.email, password: a.owner.password };
  // Another browser: the right CSRF token, but no cookie (lapsed, blocked, or a cross-site POST under SameSite=Lax).
  const cookieless = await new Browser(a.base).request(form.action, { form: credentials });
  assert.equal(cookieless.status, 400);
  const html = await cookieless.text();
  assert.match(html, /This sign-in has expired/);
  assert.match(html, /start again/);
  assert.equal(cookieless.headers.get('set-cookie'), null, 'nobody was signed in');
  const ok = await browser.request(form.action, { form: credentials });
  assert.equal(ok.status, 303, 'the browser that has the cookie still signs in');
});

test('an unknown or finished interaction shows an error page', async (t) => {
  const a = await startOAuthApp(t);
  const stranger = new Browser(a.base);
  const response = await stranger.request('/api/auth/interaction/unknown-uid');
  assert.equal(response.status, 400);
  assert.match(await response.text(), /This sign-in has expired/);
  const { browser, form } = await loginPage(a);
  const done = await completeInteraction(browser, form.action.replace(/\/login$/, ''), { login: a.owner, site: a.site.siteId });
  assert.ok(done.callback);
  const again = await browser.request(form.action.replace(/\/login$/, ''));
  assert.equal(again.status, 400);
});

test('an active session is reused: the second authorization asks for no password', async (t) => {
  const a = await startOAuthApp(t);
  const first = await authorizeCode(a);
  const { challenge } = await pkcePair();
  const step = await first.browser.follow(authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge }));
  assert.equal(step.status, 200);
  assert.equal(formOf(step.html).step, 'select_site', 'straight to the website choice');
  assert.doesNotMatch(step.html, /name="password"/);
});

test('the website choice is skipped when the user has one website', async (t) => {
  const a = await startOAuthApp(t, { twoSites: false });
  const { browser, form } = await loginPage(a);
  const next = await browser.follow(form.action, {
    form: { csrf: form.csrf, decision: 'approve', email: a.owner.email, password: a.owner.password },
  });
  assert.equal(next.status, 200);
  assert.equal(formOf(next.html).step, 'consent');
  assert.match(next.html, /Allow access to Test site\?/);
  // The product scope is asked for beside everything:read; the page says that it grants nothing yet.
  assert.match(next.html, /Read products \(this service has no products or orders yet: it grants nothing for now\)/);
  assert.doesNotMatch(next.html, /Read your website’s pages and blogs \(/);
});

test("the chosen website is the connection's, and a second authorization for another website is a new connection", async (t) => {
  const a = await startOAuthApp(t);
  const one = await connect(a, { site: a.site.siteId });
  const two = await connect(a, { site: a.site2.siteId, browser: one.browser });
  const [c1] = await listConnections(a.db.kysely, a.site.siteId);
  const [c2] = await listConnections(a.db.kysely, a.site2.siteId);
  assert.ok(c1 && c2);
  assert.notEqual(c1.id, c2.id);
  assert.equal(c1.user_email, a.owner.email);
  assert.deepEqual(c1.scopes, ['everything:read']);
  const page = await a.app.inject({ method: 'POST', url: '/api/page', headers: a.site2.headers, payload: { page_usertitle: 'On site 2' } });
  const id = JSON.parse(page.body).data[0].page;
  const read = (token: string) => a.app.inject({ url: `/api/page/${id}`, headers: { authorization: `Bearer ${token}` } });
  assert.equal((await read(two.tokens.access_token)).statusCode, 200);
  assert.equal((await read(one.tokens.access_token)).statusCode, 404, 'the first token stays on the first website');
});

test('a website the user does not belong to cannot be chosen', async (t) => {
  const a = await startOAuthApp(t);
  const stranger = await a.addSite('Not yours');
  const { browser, form } = await loginPage(a);
  const sites = await browser.follow(form.action, {
    form: { csrf: form.csrf, decision: 'approve', email: a.owner.email, password: a.owner.password },
  });
  const siteForm = formOf(sites.html);
  assert.equal(siteForm.step, 'select_site');
  const refused = await browser.follow(siteForm.action, {
    form: { csrf: siteForm.csrf, decision: 'approve', site: String(stranger.siteId) },
  });
  assert.equal(refused.status, 400);
  assert.match(refused.html, /Choose one of your websites\./);
});

test('approving fewer scopes narrows the token; none, or deny, is access_denied', async (t) => {
  const a = await startOAuthApp(t);
  const fewer = await connect(a, { scope: 'everything:read everything:write order:read', approve: ['everything:read', 'order:read'] });
  assert.equal(fewer.tokens.scope, 'everything:read order:read');
  for (const answers of [{ approve: [] }, { approve: ['everything:admin'] }, { decision: 'deny' as const }]) {
    const { challenge } = await pkcePair();
    const step = await completeInteraction(
      new Browser(a.base),
      authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge, state: 's1' }),
      {
        login: a.owner,
        site: a.site.siteId,
        ...answers,
      },
    );
    assert.ok(step.callback, JSON.stringify(answers));
    assert.equal(step.callback.searchParams.get('error'), 'access_denied');
    assert.equal(step.callback.searchParams.get('state'), 's1');
    assert.equal(step.callback.searchParams.get('iss'), a.issuer);
    assert.equal(step.callback.searchParams.get('code'), null);
  }
  const statuses = (await listConnections(a.db.kysely, a.site.siteId)).map((c) => c.status);
  assert.deepEqual(statuses, ['active'], 'a refusal creates no connection');
});

test('a stored client name cannot reorder or widen the sentences of the pages: it is isolated and wraps', async (t) => {
  const a = await startOAuthApp(t);
  // Stored before names were checked, or written straight to the database.
  const name = `\u202Egnp.exe\u200B${'W'.repeat(3000)}`;
  await a.db.kysely.updateTable('oauth_clients').set({ name }).where('client_id', '=', a.clientId).execute();
  const isolated = `<strong><bdi class="client-name">${name}</bdi></strong>`;
  const { browser, step, form } = await loginPage(a);
  assert.ok(step.html.includes(`${isolated} wants to access one of your websites.`), 'login page');
  const sites = await browser.follow(form.action, {
    form: { csrf: form.csrf, decision: 'approve', email: a.owner.email, password: a.owner.password },
  });
  assert.ok(sites.html.includes(`Which website may ${isolated} access?`), 'website page');
  const siteForm = formOf(sites.html);
  const consent = await browser.follow(siteForm.action, {
    form: { csrf: siteForm.csrf, decision: 'approve', site: String(a.site.siteId) },
  });
  assert.equal(formOf(consent.html).step, 'consent');
  assert.ok(consent.html.includes(`${isolated} asks for these permissions.`), 'consent page');
  assert.equal(consent.html.split(name).length, 2, 'the name appears once, inside the bdi');
  assert.match(consent.html, /\.client-name \{ unicode-bidi: isolate; overflow-wrap: anywhere; \}/);
});

test('the pages escape what they show', async (t) => {
  const a = await startOAuthApp(t);
  await a.db.kysely.updateTable('oauth_clients').set({ name: '<script>alert(1)</script>' }).where('client_id', '=', a.clientId).execute();
  const { step } = await loginPage(a);
  assert.doesNotMatch(step.html, /<script>alert/);
  assert.match(step.html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
});
