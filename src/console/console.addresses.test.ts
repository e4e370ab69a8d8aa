import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Browser, consoleLogin, startOAuthApp } from '../../test/oauth.helpers.js';
import { revokeCredential } from '../accounts/account.service.js';

test('console: a malformed website id is a 404 signed in, and the sign-in page signed out', async (t) => {
  const a = await startOAuthApp(t, { twoSites: false });
  const { browser } = await consoleLogin(a);
  const site = a.site.siteId;
  assert.equal((await browser.request(`/console/sites/${site}`)).status, 200);
  for (const path of [
    `/console/sites/0${site}`,
    `/console/sites/${site}e0`,
    `/console/sites/+${site}`,
    `/console/sites/${site}.0`,
    `/console/sites/0${site}/credentials`,
    `/console/sites/${site}/pages/01/json`,
    '/console/sites/2147483648',
    '/console/sites/abc',
  ]) {
    assert.equal((await browser.request(path)).status, 404, path);
  }

  // Signed out, no address says whether it names anything: each asks to sign in, and comes back.
  const stranger = new Browser(a.base);
  for (const path of [
    '/console/sites/abc',
    `/console/sites/0${site}`,
    '/console/clients/bad!id',
    '/console/nothing',
    `/console/sites/${site}`,
  ]) {
    const response = await stranger.request(path);
    assert.equal(response.status, 303, path);
    assert.equal(response.headers.get('location'), `/console/login?next=${encodeURIComponent(path)}`, path);
  }
  const post = await stranger.request('/console/sites/abc/credentials', { form: { label: 'x' } });
  assert.equal(post.status, 303);
  assert.equal(post.headers.get('location'), '/console/login');
});

test("console: the confirmation page of an unknown id, or another website's, is a 404 like its POST", async (t) => {
  const a = await startOAuthApp(t, { twoSites: false });
  const { browser } = await consoleLogin(a);
  const site = a.site.siteId;
  for (const path of [
    `/console/sites/${site}/credentials/ak_nope/revoke`,
    `/console/sites/${site}/credentials/${a.site2.apiId}/revoke`,
    `/console/sites/${site}/applications/cl_nope/revoke`,
    `/console/sites/${site}/applications/${encodeURIComponent('https://nobody.example/client.json')}/revoke`,
  ]) {
    const response = await browser.request(path);
    assert.equal(response.status, 404, path);
    assert.match(await response.text(), /Not found/);
  }
  // One of this website's that is already revoked: a 303 that says so, the page it belongs on.
  await revokeCredential(a.db.kysely, a.site.apiId);
  const revoked = await browser.request(`/console/sites/${site}/credentials/${a.site.apiId}/revoke`);
  assert.equal(revoked.status, 303);
  assert.match(await (await browser.request(String(revoked.headers.get('location')))).text(), /already revoked/);
});

test('console sign-in: next is followed only inside /console, judged after resolving dot segments', async (t) => {
  const a = await startOAuthApp(t);
  const signIn = async (next: string) => {
    const browser = new Browser(a.base);
    const page = await browser.request(`/console/login?next=${encodeURIComponent(next)}`);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
    const response = await browser.request('/console/login', { form: { csrf, email: a.owner.email, password: a.owner.password, next } });
    assert.equal(response.status, 303, next);
    return response.headers.get('location');
  };
  assert.equal(await signIn('/console/clients'), '/console/clients');
  assert.equal(await signIn(`/console/sites/${a.site.siteId}/credentials?x=1`), `/console/sites/${a.site.siteId}/credentials?x=1`);
  assert.equal(await signIn('/console/./clients'), '/console/clients');
  for (const next of [
    '/console/../api/page',
    '/console/%2e%2e/api/page',
    '/console/sub/../../api',
    '//evil.example/console/',
    '/consoles/x',
    'https://evil.example/console/',
  ]) {
    assert.equal(await signIn(next), '/console', next);
  }
});
