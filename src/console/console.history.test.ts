import assert from 'node:assert/strict';
import { test } from 'node:test';
import { postToolCall } from '../../test/mcp.helpers.js';
import { type Browser, connect, consoleLogin, csrfOf, type OAuthTestApp, startOAuthApp } from '../../test/oauth.helpers.js';
import { createUser } from '../accounts/account.service.js';
import { readTypedTime } from '../db/time.js';

/** The ids of the records the tests write: a page's `page`, a blog's `info_id`. */
type Written = { page?: number; info_id?: number };

/** A write through the API with a token's (or a credential's) headers; the record it answers. */
async function write(a: OAuthTestApp, headers: Record<string, string>, method: string, url: string, body?: object): Promise<Written> {
  const response = await fetch(`${a.base}${url}`, {
    method,
    headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  assert.ok(response.ok, `${method} ${url}: ${response.status} ${await response.clone().text()}`);
  return response.status === 204 ? {} : ((await response.json()) as { data: Written[] }).data[0]!;
}

const read = (a: OAuthTestApp, url: string) => fetch(`${a.base}${url}`, { headers: a.site.headers });

/** The value of the card's undo form: its default time, 24 hours ago. */
function defaultSince(html: string): string {
  const since = /name="since" type="text" value="([^"]+)"/.exec(html)?.[1];
  assert.ok(since, 'the card has the undo form');
  return since;
}

async function siteHtml(browser: Browser, a: OAuthTestApp) {
  const response = await browser.request(`/console/sites/${a.site.siteId}`);
  assert.equal(response.status, 200);
  return response.text();
}

test('console: an application’s card lists what it changed, with links to each record’s revisions; undo there takes it back as the owner', async (t) => {
  const a = await startOAuthApp(t);
  const key = a.site.headers;
  const rest = await connect(a, { site: a.site.siteId, scope: 'everything:write' });
  const mcp = await connect(a, { site: a.site.siteId, scope: 'everything:write', resource: `${a.base}/mcp` });
  const bearer = { authorization: `Bearer ${rest.tokens.access_token}` };

  // The owner's own pages, then the application's changes, through both of its connections.
  const edited = await write(a, key, 'POST', '/api/page', { page_usertitle: 'Edited by the app' });
  const removed = await write(a, key, 'POST', '/api/page', { page_usertitle: 'Deleted by the app' });
  const contested = await write(a, key, 'POST', '/api/page', { page_usertitle: 'Edited by both' });
  const made = await write(a, bearer, 'POST', '/api/page', { page_usertitle: 'Made by the app <script>' });
  const blog = await write(a, bearer, 'POST', '/api/blog', { page: made.page, info_title: 'Blog by the app' });
  await write(a, bearer, 'PATCH', `/api/page/${edited.page}`, { page_usertitle: 'Rewritten by the app' });
  await write(a, bearer, 'PATCH', `/api/page/${edited.page}`, { page_summary: 'and again' });
  await write(a, bearer, 'DELETE', `/api/page/${removed.page}`);
  await write(a, bearer, 'PATCH', `/api/page/${contested.page}`, { page_usertitle: 'The app was here' });
  const viaMcp = await postToolCall(a.base, mcp.tokens.access_token, 'save_page', { page_usertitle: 'Made through MCP' });
  assert.equal(viaMcp.status, 200);
  // Someone else after the application.
  await write(a, key, 'PATCH', `/api/page/${contested.page}`, { page_summary: 'The owner fixed it' });

  const { browser } = await consoleLogin(a);
  const html = await siteHtml(browser, a);
  const lines = [
    ...html.matchAll(
      /<li><span class="when">[^<]+ UTC<\/span> <span class="op">(\w+)<\/span> <a href="([^"]+)">(\w+ \d+)<\/a>, <a href="([^"]+)">revision (\d+)<\/a> <span class="badge kind">([^<]+)<\/span><\/li>/g,
    ),
  ];
  assert.equal(lines.length, 7, 'seven changes, newest first');
  const [newest] = lines;
  assert.equal(newest![1], 'create');
  assert.equal(newest![6], 'MCP', 'the change through MCP is marked so');
  assert.deepEqual(
    lines.slice(1).map((l) => `${l[1]} ${l[3]} ${l[5]} ${l[6]}`),
    [
      `update page ${contested.page} 2 REST API`,
      `delete page ${removed.page} 2 REST API`,
      `update page ${edited.page} 3 REST API`,
      `update page ${edited.page} 2 REST API`,
      `create blog ${blog.info_id} 1 REST API`,
      `create page ${made.page} 1 REST API`,
    ],
  );
  const recordHref = `/console/sites/${a.site.siteId}/history/page/${made.page}`;
  assert.ok(lines.some((l) => l[2] === recordHref && l[4] === `${recordHref}?revision=1`));

  // The record's revisions, its JSON escaped.
  const history = await browser.request(`/console/sites/${a.site.siteId}/history/page/${made.page}?revision=1`);
  assert.equal(history.status, 200);
  const historyHtml = await history.text();
  assert.match(historyHtml, /Revision 1<\/a>: <strong>create<\/strong> [\d-]+ [\d:]+ UTC by <bdi>Test app<\/bdi> \(REST API\)/);
  assert.match(historyHtml, /&quot;page_usertitle&quot;: &quot;Made by the app &lt;script&gt;&quot;/);
  assert.doesNotMatch(historyHtml, /Made by the app <script>/);

  // The undo, as a person does it: the card's form, the confirmation, the POST.
  const since = defaultSince(html);
  const undoPath = `/console/sites/${a.site.siteId}/applications/${a.clientId}/undo`;
  const confirm = await browser.request(`${undoPath}?since=${encodeURIComponent(since)}`);
  assert.equal(confirm.status, 200);
  const question = await confirm.text();
  assert.match(question, new RegExp(`Undo \u2068Test app\u2069’s changes since ${since} UTC\\?`));
  assert.match(question, /made 7 changes to 6 records of Test site/);
  assert.match(question, /someone else changed afterwards is left as it is/);
  const undone = await browser.request(undoPath, { form: { csrf: await csrfOf(browser, undoPath), since } });
  assert.equal(undone.status, 303);
  assert.equal(undone.headers.get('location'), `/console/sites/${a.site.siteId}`);
  const after = await siteHtml(browser, a);
  assert.match(
    after,
    new RegExp(
      `Undid \u2068Test app\u2069’s changes since ${since} UTC\\. Restored 2, deleted 3; left 1 as they are: page ${contested.page} \\(changed afterwards by test \\(api-key\\) at [\\d-]+ [\\d:]+ UTC\\)\\.`,
    ),
  );

  assert.equal((await read(a, `/api/page/${made.page}`)).status, 404, 'what it created is deleted');
  assert.equal((await read(a, `/api/blog/${blog.info_id}`)).status, 404);
  const pageOf = async (id: number | undefined) =>
    ((await (await read(a, `/api/page/${id}`)).json()) as { data: Record<string, unknown>[] }).data[0]!;
  assert.equal((await pageOf(edited.page)).page_usertitle, 'Edited by the app', 'what it changed comes back');
  assert.equal((await pageOf(edited.page)).page_summary, '', 'to before its first change');
  assert.equal((await pageOf(removed.page)).page_usertitle, 'Deleted by the app', 'what it deleted comes back');
  assert.equal((await pageOf(contested.page)).page_summary, 'The owner fixed it', 'the owner’s later change stays');
  const titles = ((await (await read(a, '/api/page')).json()) as { data: { page_usertitle: string }[] }).data.map((p) => p.page_usertitle);
  assert.ok(!titles.includes('Made through MCP'), 'the MCP connection’s change is undone too');

  // The undo's own changes are the owner's, through the console.
  const revisions = (await (await read(a, `/api/page/${edited.page}/revisions`)).json()) as { data: { op: string; actor: object }[] };
  assert.deepEqual(revisions.data[0], {
    ...revisions.data[0],
    op: 'restore',
    actor: { kind: 'console', id: String(a.owner.id), name: a.owner.email },
  });
  const restoredHistory = await (await browser.request(`/console/sites/${a.site.siteId}/history/page/${edited.page}`)).text();
  assert.match(restoredHistory, new RegExp(`<strong>restore</strong> [\\d-]+ [\\d:]+ UTC by <bdi>${a.owner.email}</bdi> \\(console\\)`));
});

test('console: the undo form refuses a malformed time with a 400 and the message; without a time it is the form; a time after every change has nothing to undo', async (t) => {
  const a = await startOAuthApp(t);
  const rest = await connect(a, { site: a.site.siteId, scope: 'everything:write' });
  const page = await write(a, { authorization: `Bearer ${rest.tokens.access_token}` }, 'POST', '/api/page', { page_usertitle: 'Kept' });
  const { browser } = await consoleLogin(a);
  const undoPath = `/console/sites/${a.site.siteId}/applications/${a.clientId}/undo`;
  const csrf = await csrfOf(browser);

  const form = await browser.request(undoPath);
  assert.equal(form.status, 200);
  assert.match(await form.text(), /Show what would be undone/);
  for (const since of ['yesterday', '2026-02-30 10:00:00', '2026-11-27 25:00:00', '<b>']) {
    const refused = await browser.request(`${undoPath}?since=${encodeURIComponent(since)}`);
    assert.equal(refused.status, 400, since);
    const refusedHtml = await refused.text();
    assert.match(refusedHtml, /Give the time as YYYY-MM-DD HH:MM:SS, in UTC/);
    assert.doesNotMatch(refusedHtml, /Undo these changes/);
    const impossible = /^\d{4}-/.test(since);
    (impossible ? assert.match : assert.doesNotMatch)(refusedHtml, /is not a date: there is no such day or time/, since);
    const posted = await browser.request(undoPath, { form: { csrf, since } });
    assert.equal(posted.status, 400, `POST ${since}`);
    assert.match(await posted.text(), /Give the time as YYYY-MM-DD HH:MM:SS, in UTC/);
  }
  assert.equal((await read(a, `/api/page/${page.page}`)).status, 200, 'nothing was undone');

  const later = await browser.request(`${undoPath}?since=${encodeURIComponent('2999-01-01T00:00')}`);
  assert.equal(later.status, 200);
  const laterHtml = await later.text();
  assert.match(laterHtml, /made no changes to this website’s pages or blogs since 2999-01-01 00:00:00 UTC/);
  assert.doesNotMatch(laterHtml, /Undo these changes/);
});

test("console: another user's website, or its records, are a 404 on the history and undo pages; an undo without the CSRF token changes nothing", async (t) => {
  const a = await startOAuthApp(t, { twoSites: false });
  const foreign = a.site2.siteId;
  const rest = await connect(a, { site: a.site.siteId, scope: 'everything:write' });
  const page = await write(a, { authorization: `Bearer ${rest.tokens.access_token}` }, 'POST', '/api/page', { page_usertitle: 'Mine' });
  // The other website's owner and a page of theirs.
  await createUser(a.db.kysely, { email: 'stranger@example.com', password: 'stranger password', siteId: foreign });
  const theirs = await write(a, a.site2.headers, 'POST', '/api/page', { page_usertitle: 'Theirs' });

  const { browser } = await consoleLogin(a);
  const csrf = await csrfOf(browser);
  const since = '2000-01-01 00:00:00';
  for (const path of [
    `/console/sites/${foreign}/history/page/${theirs.page}`,
    `/console/sites/${a.site.siteId}/history/page/${theirs.page}`,
    `/console/sites/${a.site.siteId}/history/page/${page.page}?revision=9`,
    `/console/sites/${a.site.siteId}/history/pages/${page.page}`,
    `/console/sites/${a.site.siteId}/history/page/0${page.page}`,
    `/console/sites/${foreign}/applications/${a.clientId}/undo`,
    `/console/sites/${foreign}/applications/${a.clientId}/undo?since=${encodeURIComponent(since)}`,
    `/console/sites/${a.site.siteId}/applications/cl_nobody/undo`,
  ]) {
    assert.equal((await browser.request(path)).status, 404, path);
  }
  assert.equal((await browser.request(`/console/sites/${a.site.siteId}/history/page/${page.page}`)).status, 200);
  assert.equal((await browser.request(`/console/sites/${foreign}/applications/${a.clientId}/undo`, { form: { csrf, since } })).status, 404);

  const undoPath = `/console/sites/${a.site.siteId}/applications/${a.clientId}/undo`;
  for (const token of [undefined, 'forged']) {
    const refused = await browser.request(undoPath, { form: { since, ...(token ? { csrf: token } : {}) } });
    assert.equal(refused.status, 403);
  }
  assert.equal((await read(a, `/api/page/${page.page}`)).status, 200, 'the page the application made is still there');
  assert.equal((await fetch(`${a.base}/api/page/${theirs.page}`, { headers: a.site2.headers })).status, 200);
});

test('typed times: stored times and a browser’s datetime-local are read; a time of another form, and one of the form that does not exist, each say so', () => {
  assert.deepEqual(readTypedTime('2026-11-27 09:00:00'), { at: '2026-11-27 09:00:00' });
  assert.deepEqual(readTypedTime(' 2026-11-27T09:00 '), { at: '2026-11-27 09:00:00' });
  assert.deepEqual(readTypedTime('2026-11-27 09:00:05 UTC'), { at: '2026-11-27 09:00:05' });
  for (const raw of ['', '2026-11-27', '27/11/2026 09:00', '2026-11-27 09:00:00+02:00']) {
    assert.deepEqual(readTypedTime(raw), { invalid: 'format' }, raw);
  }
  for (const raw of ['2026-02-29 00:00:00', '2026-02-30 10:00:00', '2026-11-27 09:00:60', '2026-11-27 24:00:00']) {
    assert.deepEqual(readTypedTime(raw), { invalid: 'date' }, raw);
  }
});
