import assert from 'node:assert/strict';
import { test } from 'node:test';
import { postToolCall } from '../../test/mcp.helpers.js';
import {
  authorizeCode,
  authorizeUrl,
  Browser,
  completeInteraction,
  connect,
  consoleLogin,
  csrfOf,
  exchangeCode,
  pkcePair,
  startOAuthApp,
} from '../../test/oauth.helpers.js';
import { listCredentials } from '../accounts/account.repository.js';
import { createUser } from '../accounts/account.service.js';
import { createClient } from '../oauth/clients/client.service.js';
import { findApplication, listConnections } from '../oauth/connections/connection.service.js';

test('console: signed out goes to the sign-in page; a wrong password is refused; a right one shows the websites', async (t) => {
  const a = await startOAuthApp(t);
  const anonymous = await new Browser(a.base).request('/console/sites/1');
  assert.equal(anonymous.status, 303);
  assert.equal(anonymous.headers.get('location'), '/console/login?next=%2Fconsole%2Fsites%2F1');

  const wrong = await consoleLogin(a, 'not the password');
  assert.equal(wrong.response.status, 400);
  assert.match(await wrong.response.text(), /not correct/);

  const { browser, response } = await consoleLogin(a);
  assert.equal(response.status, 303);
  assert.equal(response.headers.get('location'), '/console');
  const session = response.headers.getSetCookie().find((c) => c.startsWith('_session='));
  assert.match(String(session), /httponly/i);
  assert.match(String(session), /samesite=lax/i);
  const home = await browser.request('/console');
  assert.equal(home.status, 200);
  const html = await home.text();
  assert.match(html, /Test site/);
  assert.match(html, /Second site/);
  assert.match(String(home.headers.get('content-security-policy')), /frame-ancestors 'none'/);
  assert.equal(home.headers.get('referrer-policy'), 'no-referrer');
  assert.equal(home.headers.get('cache-control'), 'no-store');
});

test('console: one session with the OAuth pages, both ways; signing out ends it for both', async (t) => {
  const a = await startOAuthApp(t);
  // Signed in on the OAuth pages → signed in on the console.
  const { browser } = await connect(a, { site: a.site.siteId });
  assert.equal((await browser.request('/console')).status, 200);

  // Signed in on the console → the OAuth flow asks no password, it starts at the website choice.
  const consoleSide = (await consoleLogin(a)).browser;
  const { challenge } = await pkcePair();
  const step = await consoleSide.follow(authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge }));
  assert.equal(step.status, 200);
  assert.match(step.html, /Choose a website/);
  assert.doesNotMatch(step.html, /type="password"/);

  const out = await consoleSide.request('/console/logout', { form: { csrf: await csrfOf(consoleSide) } });
  assert.equal(out.status, 303);
  assert.equal(out.headers.get('location'), '/console/login');
  assert.equal((await consoleSide.request('/console')).status, 303);
  const again = await consoleSide.follow(authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge }));
  assert.match(again.html, /type="password"/, 'the OAuth pages ask for the password again');
});

test('console: a POST without the session CSRF token is refused and changes nothing', async (t) => {
  const a = await startOAuthApp(t);
  const { browser } = await consoleLogin(a);
  const before = (await listCredentials(a.db.kysely, a.site.siteId)).length;
  for (const csrf of [undefined, 'forged', await csrfOf(new Browser(a.base), '/console/login')]) {
    const response = await browser.request(`/console/sites/${a.site.siteId}/credentials`, {
      form: { label: 'x', ...(csrf ? { csrf } : {}) },
    });
    assert.equal(response.status, 403);
  }
  assert.equal((await listCredentials(a.db.kysely, a.site.siteId)).length, before);
  // Another session's token is no token for this one.
  const other = (await consoleLogin(a)).browser;
  const foreign = await browser.request('/console/account/password', {
    form: { csrf: await csrfOf(other), current: a.owner.password, password: 'new password 1', repeat: 'new password 1' },
  });
  assert.equal(foreign.status, 403);
  // The sign-in form needs its own token too.
  const bare = await new Browser(a.base).request('/console/login', { form: { email: a.owner.email, password: a.owner.password } });
  assert.equal(bare.status, 403);
  // A JSON body is not a form.
  const json = await fetch(`${a.base}/console/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(json.status, 415);
});

test("console: another website's id, or a record of another website or user, is a 404", async (t) => {
  const a = await startOAuthApp(t, { twoSites: false });
  const { browser } = await consoleLogin(a);
  const csrf = await csrfOf(browser);
  const foreign = a.site2.siteId;
  for (const path of [
    `/console/sites/${foreign}`,
    `/console/sites/${foreign}/credentials`,
    `/console/sites/${foreign}/pages`,
    '/console/sites/abc',
    '/console/sites/0',
    '/console/nothing',
  ]) {
    assert.equal((await browser.request(path)).status, 404, path);
  }
  const created = await browser.request(`/console/sites/${foreign}/credentials`, { form: { csrf, label: 'sneaky' } });
  assert.equal(created.status, 404);
  // The other website's credential through the user's own website's URL.
  const revoke = await browser.request(`/console/sites/${a.site.siteId}/credentials/${a.site2.apiId}/revoke`, { form: { csrf } });
  assert.equal(revoke.status, 404);
  assert.equal((await listCredentials(a.db.kysely, foreign)).find((c) => c.api_id === a.site2.apiId)?.revoked_at, null);

  // An application connected to the other website only (by its own owner), named under this one's URL.
  const stranger = await createUser(a.db.kysely, { email: 'stranger@example.com', password: 'stranger password', siteId: foreign });
  assert.ok(stranger.id);
  const { verifier, challenge } = await pkcePair();
  const step = await completeInteraction(new Browser(a.base), authorizeUrl(a.issuer, { clientId: a.clientId, codeChallenge: challenge }), {
    login: { email: 'stranger@example.com', password: 'stranger password' },
  });
  assert.equal((await exchangeCode(a, String(step.callback?.searchParams.get('code')), verifier)).status, 200);
  const cross = await browser.request(`/console/sites/${a.site.siteId}/applications/${a.clientId}/revoke`, { form: { csrf } });
  assert.equal(cross.status, 404);
  assert.equal((await listConnections(a.db.kysely, foreign))[0]?.status, 'active');

  // Another user's OAuth client.
  const { clientId } = await createClient(a.db.kysely, {
    name: 'Theirs',
    redirectUris: ['https://theirs.example/cb'],
    ownerUserId: stranger.id,
  });
  assert.equal((await browser.request(`/console/clients/${clientId}`)).status, 404);
  assert.equal((await browser.request(`/console/clients/${clientId}/delete`, { form: { csrf } })).status, 404);
  // The operator's client (no owner) is nobody's to edit here.
  assert.equal((await browser.request(`/console/clients/${a.clientId}`)).status, 404);
});

test('console: one card per application, its REST API and MCP connections told apart; revoking it ends them all, on that website only', async (t) => {
  const a = await startOAuthApp(t);
  const rest = [await connect(a, { site: a.site.siteId }), await connect(a, { site: a.site.siteId, scope: 'everything:write' })];
  const mcp = await connect(a, { site: a.site.siteId, resource: `${a.base}/mcp` });
  const unexchanged = await authorizeCode(a, { site: a.site.siteId });
  const elsewhere = await connect(a, { site: a.site2.siteId });
  const { browser } = await consoleLogin(a);
  const sitePage = async () => (await browser.request(`/console/sites/${a.site.siteId}`)).text();

  const html = await sitePage();
  assert.equal(html.match(/<li class="application">/g)?.length, 1, 'three connections, one application');
  assert.equal(html.match(/<bdi class="client-name">Test app<\/bdi>/g)?.length, 1);
  assert.equal(html.match(/badge kind">REST API</g)?.length, 2);
  assert.equal(html.match(/badge kind">MCP</g)?.length, 1);
  assert.match(html, /<dt>Uses<\/dt><dd>REST API, MCP<\/dd>/);
  assert.doesNotMatch(html, /ended connection/);
  const app = await findApplication(a.db.kysely, a.site.siteId, a.clientId);
  assert.equal(app?.connection_ids.length, 3, 'the authorization whose code was never exchanged is not one of them');

  const path = `/console/sites/${a.site.siteId}/applications/${a.clientId}/revoke`;
  const confirm = await browser.request(path);
  assert.equal(confirm.status, 200);
  // A client's name is isolated wherever it is shown, so no name can reorder the sentence around it.
  const question = await confirm.text();
  assert.match(question, /Revoke \u2068Test app\u2069\?/);
  assert.match(question, /every connection it has to this website \(REST API, MCP\) ends/);
  const revoked = await browser.request(path, { form: { csrf: await csrfOf(browser) } });
  assert.equal(revoked.status, 303);

  const api = (token: string) => fetch(`${a.base}/api/page`, { headers: { authorization: `Bearer ${token}` } });
  for (const { tokens } of rest) assert.equal((await api(tokens.access_token)).status, 401);
  assert.equal((await postToolCall(a.base, mcp.tokens.access_token, 'list_pages')).status, 401, 'the MCP connection ended too');
  assert.equal((await exchangeCode(a, unexchanged.code, unexchanged.verifier)).status, 400, 'and the authorization under way');
  assert.equal((await api(elsewhere.tokens.access_token)).status, 200, "the other website's connection lives on");

  const after = await sitePage();
  assert.match(after, /\u2068Test app\u2069 is revoked/);
  assert.equal(after.match(/<li class="application">/g)?.length, 1);
  assert.match(after, /badge danger">revoked/);
  assert.match(after, /<summary>3 ended connections<\/summary>/);
  assert.doesNotMatch(after, /Revoke…/);
  const again = await browser.request(path);
  assert.equal(again.status, 303, 'an application no longer connected has nothing to confirm');
  assert.match(await (await browser.request(String(again.headers.get('location')))).text(), /no longer connected/);
});

test('console: an application whose client_id is a URL has its card and its revocation too', async (t) => {
  const a = await startOAuthApp(t);
  await connect(a, { site: a.site.siteId });
  // As a metadata document client is recorded: its client_id is its document's URL.
  const url = 'https://agent.example/client.json';
  const client = await a.db.kysely.selectFrom('oauth_clients').selectAll().where('client_id', '=', a.clientId).executeTakeFirstOrThrow();
  await a.db.kysely
    .insertInto('oauth_clients')
    .values({ ...client, client_id: url, source: 'metadata_document' })
    .execute();
  await a.db.kysely.updateTable('oauth_connections').set({ client_id: url }).execute();
  const { browser } = await consoleLogin(a);
  const html = await (await browser.request(`/console/sites/${a.site.siteId}`)).text();
  const href = `/console/sites/${a.site.siteId}/applications/${encodeURIComponent(url)}/revoke`;
  assert.ok(html.includes(`href="${href}"`), href);
  assert.equal((await browser.request(href)).status, 200);
  assert.equal((await browser.request(href, { form: { csrf: await csrfOf(browser) } })).status, 303);
  assert.equal((await listConnections(a.db.kysely, a.site.siteId))[0]?.status, 'revoked');
});

test('console: the password changes only with the current one, and the new one signs in', async (t) => {
  const a = await startOAuthApp(t);
  const { browser } = await consoleLogin(a);
  const csrf = await csrfOf(browser);
  const wrong = await browser.request('/console/account/password', {
    form: { csrf, current: 'nope', password: 'brand new pass', repeat: 'brand new pass' },
  });
  assert.equal(wrong.status, 400);
  assert.match(await wrong.text(), /current password is not correct/);
  const short = await browser.request('/console/account/password', {
    form: { csrf, current: a.owner.password, password: 'short', repeat: 'short' },
  });
  assert.equal(short.status, 400);
  const changed = await browser.request('/console/account/password', {
    form: { csrf, current: a.owner.password, password: 'brand new pass', repeat: 'brand new pass' },
  });
  assert.equal(changed.status, 303);
  assert.match(await (await browser.request('/console/account')).text(), /Your password is changed/);
  assert.equal((await consoleLogin(a, a.owner.password)).response.status, 400);
  assert.equal((await consoleLogin(a, 'brand new pass')).response.status, 303);
});

test('console: a new API key is shown once, then only its API ID', async (t) => {
  const a = await startOAuthApp(t);
  const { browser } = await consoleLogin(a);
  const created = await browser.request(`/console/sites/${a.site.siteId}/credentials`, {
    form: { csrf: await csrfOf(browser), label: 'Build server' },
  });
  assert.equal(created.status, 303);
  const shown = await (await browser.request(String(created.headers.get('location')))).text();
  const key = /id="new-api-key">(sk_[\w-]+)</.exec(shown)?.[1];
  const apiId = /id="new-api-id">(ak_[\w-]+)</.exec(shown)?.[1];
  assert.ok(key && apiId);
  const again = await (await browser.request(`/console/sites/${a.site.siteId}/credentials`)).text();
  assert.doesNotMatch(again, new RegExp(key));
  assert.match(again, new RegExp(apiId));
  const api = await fetch(`${a.base}/api/page`, {
    headers: { authorization: `Basic ${Buffer.from(`${apiId}:${key}`).toString('base64')}` },
  });
  assert.equal(api.status, 200);
});

test('console: a credential limited to the permissions ticked may do only that; none ticked is every permission', async (t) => {
  const a = await startOAuthApp(t);
  const { browser } = await consoleLogin(a);
  const form = await (await browser.request(`/console/sites/${a.site.siteId}/credentials`)).text();
  assert.match(form, /<input type="checkbox" name="scope" value="blogs:read"> Read your website’s blog articles <code>blogs:read<\/code>/);
  assert.doesNotMatch(form, /value="product:read"/, 'scopes that grant nothing are not offered');
  const unknown = await browser.request(`/console/sites/${a.site.siteId}/credentials`, {
    form: { csrf: await csrfOf(browser), label: 'Odd', scope: ['blogs:read', 'blogs:delete'] },
  });
  assert.equal(unknown.status, 400);
  const again = await unknown.text();
  assert.match(again, /Unknown scope blogs:delete/);
  assert.match(again, /value="blogs:read" checked>/, 'the form comes back as it was ticked');
  const created = await browser.request(`/console/sites/${a.site.siteId}/credentials`, {
    form: { csrf: await csrfOf(browser), label: 'Analytics', scope: ['blogs:read'] },
  });
  assert.equal(created.status, 303);
  const shown = await (await browser.request(String(created.headers.get('location')))).text();
  const key = /id="new-api-key">(sk_[\w-]+)</.exec(shown)?.[1];
  const apiId = /id="new-api-id">(ak_[\w-]+)</.exec(shown)?.[1];
  assert.match(shown, /<dt>Permissions<\/dt><dd>Read your website’s blog articles<\/dd>/);
  assert.match(shown, /<dt>Permissions<\/dt><dd>Everything on this website<\/dd>/, 'the test site’s key was made without scopes');
  const headers = { authorization: `Basic ${Buffer.from(`${apiId}:${key}`).toString('base64')}` };
  assert.equal((await fetch(`${a.base}/api/blog`, { headers })).status, 200);
  const pages = await fetch(`${a.base}/api/page`, { headers });
  assert.equal(pages.status, 403);
  assert.match(String(pages.headers.get('www-authenticate')), /error="insufficient_scope", scope="pages:read"/);
});

test('console: a credential may name a default page of its website, shown in the list; blogs without page go there', async (t) => {
  const a = await startOAuthApp(t);
  const page = await a.app.inject({ method: 'POST', url: '/api/page', headers: a.site.headers, payload: { page_usertitle: 'News' } });
  const pageId = JSON.parse(page.body).data[0].page as number;
  const { browser } = await consoleLogin(a);
  const form = await (await browser.request(`/console/sites/${a.site.siteId}/credentials`)).text();
  assert.match(form, new RegExp(`<option value="${pageId}">News</option>`), 'the website’s pages are the choices');
  const foreign = await browser.request(`/console/sites/${a.site.siteId}/credentials`, {
    form: { csrf: await csrfOf(browser), label: 'Elsewhere', defaultPage: '999999' },
  });
  assert.equal(foreign.status, 400, 'a page the website lacks is refused, with the form again');
  assert.match(await foreign.text(), /has no page 999999/);
  const created = await browser.request(`/console/sites/${a.site.siteId}/credentials`, {
    form: { csrf: await csrfOf(browser), label: 'Newsroom', defaultPage: String(pageId) },
  });
  assert.equal(created.status, 303);
  const shown = await (await browser.request(String(created.headers.get('location')))).text();
  const key = /id="new-api-key">(sk_[\w-]+)</.exec(shown)?.[1];
  const apiId = /id="new-api-id">(ak_[\w-]+)</.exec(shown)?.[1];
  assert.match(shown, /<dt>Default page<\/dt><dd>News<\/dd>/);
  const blog = await fetch(`${a.base}/api/blog`, {
    method: 'POST',
    headers: { apiID: String(apiId), apiKey: String(key), 'content-type': 'application/json' },
    body: JSON.stringify({ info_title: 'Posted without a page' }),
  });
  assert.equal(blog.status, 201);
  assert.equal(((await blog.json()) as { data: Array<{ page: number }> }).data[0]!.page, pageId);
});

test('front door: / links to the docs, the OpenAPI document and the console; /try is allowed its script and nothing more', async (t) => {
  const a = await startOAuthApp(t);
  const home = await fetch(`${a.base}/`);
  assert.equal(home.status, 200);
  const html = await home.text();
  for (const link of ['/docs', '/api/openapi.json', '/console', '/try']) assert.match(html, new RegExp(`href="${link}"`));
  assert.doesNotMatch(String(home.headers.get('content-security-policy')), /script-src/);
  const tryPage = await fetch(`${a.base}/try`);
  const policy = String(tryPage.headers.get('content-security-policy'));
  const nonce = /script-src 'nonce-([^']+)'/.exec(policy)?.[1];
  assert.ok(nonce);
  assert.match(await tryPage.text(), new RegExp(`<script src="/try.js" nonce="${nonce.replace(/[+/]/g, '\\$&')}">`));
  assert.match(policy, /connect-src 'self'/);
  assert.equal((await fetch(`${a.base}/try.js`)).headers.get('content-type'), 'text/javascript; charset=utf-8');
});
