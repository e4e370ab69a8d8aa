import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { addTestSite, createTestDatabase } from '../../test/helpers.js';
import { Browser, consoleLogin, csrfOf, type OAuthServer, startOAuthApp } from '../../test/oauth.helpers.js';
import { freePort } from '../../test/server-process.js';
import { listCredentials } from '../accounts/account.repository.js';
import { createUser } from '../accounts/account.service.js';
import { LOGIN_ATTEMPTS } from '../accounts/sign-in.js';
import { buildApp } from '../app.js';
import { testConfig } from '../config.js';

/** A console on a listening server whose log lines (warn and up, or from `logLevel`) the test reads. */
async function consoleWithLog(t: TestContext, logLevel: 'warn' | 'info' = 'warn') {
  const lines: { level: number; msg?: string; err?: { message?: string } }[] = [];
  const db = await createTestDatabase(t);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const app = await buildApp({
    config: testConfig({ publicUrl: base, logLevel }),
    db,
    logStream: { write: (line: string) => lines.push(JSON.parse(line)) },
  });
  t.after(() => app.close());
  await app.listen({ port, host: '127.0.0.1' });
  const site = await addTestSite(db);
  const password = 'correct horse battery';
  const user = await createUser(db.kysely, { email: 'owner@example.com', password, siteId: site.siteId });
  const server = { base, owner: { id: user.id, email: user.email, password } } as OAuthServer;
  return { server, lines, site };
}

test('console: a refused client form is the 400 form, answered once: no error logged, no success flash', async (t) => {
  const { server, lines } = await consoleWithLog(t);
  const { browser } = await consoleLogin(server);
  const csrf = await csrfOf(browser);
  const refusals = [
    { name: '', redirect_uris: 'https://app.example/cb' },
    { name: 'Evil', redirect_uris: 'http://evil.example/cb' },
  ];
  for (const form of refusals) {
    const refused = await browser.request('/console/clients', { form: { csrf, ...form } });
    assert.equal(refused.status, 400, form.redirect_uris);
    const html = await refused.text();
    assert.match(html, /class="error" role="alert"/);
    assert.match(html, new RegExp(form.redirect_uris.replace(/[./]/g, '\\$&')), 'what was typed is shown again');
    assert.ok(!refused.headers.getSetCookie().some((c) => c.startsWith('_console_flash=')), 'no flash cookie');
  }
  const created = await browser.request('/console/clients', { form: { csrf, name: 'Mine', redirect_uris: 'https://mine.example/cb' } });
  assert.equal(created.status, 303);
  const clientPath = String(created.headers.get('location'));
  assert.match(await (await browser.request(clientPath)).text(), /\u2068Mine\u2069 is registered/);

  const edit = await browser.request(clientPath, { form: { csrf, redirect_uris: 'http://evil.example/cb' } });
  assert.equal(edit.status, 400);
  assert.match(await edit.text(), /http:\/\/evil\.example\/cb/);
  assert.ok(!edit.headers.getSetCookie().some((c) => c.startsWith('_console_flash=')));
  const after = await (await browser.request('/console/clients')).text();
  assert.doesNotMatch(after, /is registered|are saved/, 'no success message on the next page');

  assert.deepEqual(
    lines.filter((line) => line.level >= 50),
    [],
    'nothing logged at error level',
  );
});

test('console: a refused credential label is the 400 form with what was typed; nothing is created', async (t) => {
  const a = await startOAuthApp(t);
  const { browser } = await consoleLogin(a);
  const csrf = await csrfOf(browser);
  const path = `/console/sites/${a.site.siteId}/credentials`;
  const before = (await listCredentials(a.db.kysely, a.site.siteId)).length;
  for (const label of ['   ', '', 'x'.repeat(101)]) {
    const refused = await browser.request(path, { form: { csrf, label } });
    assert.equal(refused.status, 400, JSON.stringify(label));
    const html = await refused.text();
    assert.match(html, /Give the credential a label of 1 to 100 characters/);
    assert.match(html, new RegExp(`id="label" name="label"[^>]*value="${label}"`), 'the label typed is in the field');
  }
  assert.equal((await listCredentials(a.db.kysely, a.site.siteId)).length, before);
  const made = await browser.request(path, { form: { csrf, label: `  ${'y'.repeat(100)}  ` } });
  assert.equal(made.status, 303, '100 characters after trimming is allowed');
});

test('console: wrong current passwords count against the sign-in limits; past them a 429, even for the right one', async (t) => {
  const a = await startOAuthApp(t);
  const { browser } = await consoleLogin(a);
  const csrf = await csrfOf(browser);
  const change = (current: string) =>
    browser.request('/console/account/password', { form: { csrf, current, password: 'brand new pass', repeat: 'brand new pass' } });
  for (let i = 0; i < LOGIN_ATTEMPTS; i++) {
    const wrong = await change(`guess ${i}`);
    assert.equal(wrong.status, 400);
    assert.match(await wrong.text(), /current password is not correct/);
  }
  const limited = await change(a.owner.password);
  assert.equal(limited.status, 429);
  assert.match(String(limited.headers.get('retry-after')), /^\d+$/);
  assert.match(await limited.text(), /Too many wrong passwords\. The current password is not checked again for 15 minutes/);
  // The same counters as the sign-in form: switching to it gains nothing.
  assert.equal((await consoleLogin(a)).response.status, 429);
  assert.equal((await consoleLogin(a, 'brand new pass')).response.status, 429, 'the password did not change');
});

test('console: a right current password resets the count, as a sign-in does', async (t) => {
  const a = await startOAuthApp(t);
  const { browser } = await consoleLogin(a);
  const csrf = await csrfOf(browser);
  const change = (current: string, next: string) =>
    browser.request('/console/account/password', { form: { csrf, current, password: next, repeat: next } });
  for (let i = 0; i < LOGIN_ATTEMPTS - 1; i++) assert.equal((await change(`guess ${i}`, 'brand new pass')).status, 400);
  assert.equal((await change(a.owner.password, 'brand new pass')).status, 303);
  for (let i = 0; i < LOGIN_ATTEMPTS - 1; i++) assert.equal((await change(`guess ${i}`, 'newer still')).status, 400);
  assert.equal((await change('brand new pass', 'newer still')).status, 303);
});

test('console: credentials sent in the query string are copied into no redirect, no page and no log line', async (t) => {
  const { server, lines } = await consoleWithLog(t, 'info');
  const key = 'k3yInTheQueryString';
  const id = 'ak_idInTheQueryString';
  const leaks = (text: string) => text.includes(key) || text.includes(id);

  // Signed out: to the sign-in page, which brings the browser back to the same page, without them.
  const signedOut = await fetch(`${server.base}/console?apiKey=${key}&apiID=${id}&tab=sites`, { redirect: 'manual' });
  assert.equal(signedOut.status, 303);
  const toLogin = String(signedOut.headers.get('location'));
  assert.ok(!leaks(decodeURIComponent(toLogin)), toLogin);
  assert.equal(toLogin, `/console/login?next=${encodeURIComponent('/console?tab=sites')}`, 'the rest of the address is kept');
  const login = await fetch(`${server.base}${toLogin}`, { redirect: 'manual' });
  assert.equal(login.status, 200);
  assert.ok(!leaks(await login.text()), 'the sign-in page does not carry them on');
  // Spelled in any case, or percent-encoded, as the API-key method reads them.
  const encoded = await fetch(`${server.base}/console/account?APIKEY=${key}&api%49D=${id}`, { redirect: 'manual' });
  assert.equal(encoded.headers.get('location'), `/console/login?next=${encodeURIComponent('/console/account')}`);

  // Signed in: `next` (from the query or the sign-in form) goes on without them.
  const { browser } = await consoleLogin(server);
  const next = encodeURIComponent(`/console/account?apiKey=${key}&apiID=${id}`);
  const signedIn = await browser.request(`/console/login?next=${next}`);
  assert.equal(signedIn.status, 303);
  assert.equal(signedIn.headers.get('location'), '/console/account');
  const fresh = new Browser(server.base);
  const form = await fresh.request(`/console/login?next=${next}`);
  const html = await form.text();
  assert.ok(!leaks(html), 'the sign-in form does not carry them on');
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
  const { email, password } = server.owner;
  const posted = await fresh.request('/console/login', { form: { csrf, email, password, next: decodeURIComponent(next) } });
  assert.equal(posted.status, 303);
  assert.equal(posted.headers.get('location'), '/console/account');

  assert.ok(lines.length > 0, 'requests were logged');
  assert.deepEqual(
    lines.filter((line) => leaks(JSON.stringify(line))),
    [],
    'no log line holds them',
  );
});
