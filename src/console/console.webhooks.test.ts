import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { type Browser, consoleLogin, csrfOf, startOAuthApp } from '../../test/oauth.helpers.js';
import { until } from '../../test/until.js';
import { webhookReceiver } from '../../test/webhook-receiver.js';
import { testConfig } from '../config.js';
import { formatTimestamp } from '../db/time.js';
import { listDeliveries } from '../webhooks/webhook.deliveries.js';
import { deliveryGuard } from '../webhooks/webhook.guard.js';
import { createWebhook, listWebhooks } from '../webhooks/webhook.service.js';

const SECRET = /whsec_[A-Za-z0-9+/=]+/g;

/** A server whose hooks may point at a receiver on 127.0.0.1, retried quickly (twice) when it fails. */
async function setUp(t: TestContext, options: { twoSites?: boolean } = {}) {
  const webhooks = { ...testConfig().webhooks, allowPrivateTargets: true, pollMs: 20, retrySchedule: [0.2, 0.2] };
  const a = await startOAuthApp(t, { config: { webhooks }, ...options });
  const receiver = await webhookReceiver(t);
  const { browser } = await consoleLogin(a);
  const csrf = await csrfOf(browser);
  return { a, receiver, browser, csrf, tab: `/console/sites/${a.site.siteId}/webhooks` };
}

/** Values the add form and the edit form both refuse, with the reason they show; `url` is one the guard accepts. */
const refusedValues = (url: string): Array<[Record<string, string | string[]>, RegExp]> => [
  [{ url: '', events: '*' }, /Give the URL that receives the deliveries\./],
  [{ url: 'not a url', events: '*' }, /The URL must be an absolute URL, such as https:\/\/example\.com\/hooks\/cms\./],
  [
    { url: 'https://169.254.169.254/latest', events: '*' },
    /The URL 169\.254\.169\.254 resolves to 169\.254\.169\.254, which is not a public address/,
  ],
  [{ url: 'ftp://127.0.0.1/hook', events: '*', description: 'typed' }, /The URL ftp: is not fetched/],
  [{ url, events: '*', description: 'x'.repeat(501) }, /The description is 501 characters long; it may have 500 at most\./],
];

async function html(browser: Browser, path: string, status = 200): Promise<string> {
  const response = await browser.request(path);
  assert.equal(response.status, status, path);
  return response.text();
}

/** Adds a hook through the tab's form; its id and the secret the next page shows. */
async function addHook(s: Awaited<ReturnType<typeof setUp>>, events = ['*'], description = '') {
  const response = await s.browser.request(s.tab, { form: { csrf: s.csrf, url: s.receiver.url, events, description } });
  assert.equal(response.status, 303);
  assert.equal(response.headers.get('location'), s.tab);
  const page = await html(s.browser, s.tab);
  const secrets = page.match(SECRET) ?? [];
  assert.equal(secrets.length, 1, 'the new secret is on the page the 303 leads to');
  const [hook] = (await listWebhooks(s.a.db.kysely, s.a.site.siteId)).slice(-1);
  return { id: hook!.id, secret: secrets[0]!, page };
}

test('console webhooks: a hook added in the tab shows its secret once, which signs its deliveries; the list never shows it again', async (t) => {
  const s = await setUp(t);
  assert.match(await html(s.browser, `/console/sites/${s.a.site.siteId}`), /href="\/console\/sites\/\d+\/webhooks">Webhooks<\/a>/);
  const empty = await html(s.browser, s.tab);
  assert.match(empty, /This website has no webhook\./);
  for (const event of ['page.created', 'page.updated', 'page.deleted', 'page.restored', 'blog.created', 'blog.deleted', '*']) {
    assert.match(empty, new RegExp(`<input type="checkbox" name="events" value="${event.replace('*', '\\*')}">`), event);
  }

  const { id, secret, page } = await addHook(s, ['page.created', 'blog.deleted'], 'Rebuild the site');
  assert.match(page, /New hook: http:\/\/127\.0\.0\.1:\d+\/hook/);
  assert.match(page, /shown only this once/);
  assert.match(page, /<dt>Events<\/dt><dd>page\.created, blog\.deleted<\/dd>/);
  assert.match(page, /<dt>Description<\/dt><dd>Rebuild the site<\/dd>/);
  const [stored] = await s.a.db.kysely.selectFrom('webhooks').select('secret').where('id', '=', id).execute();
  assert.equal(stored!.secret, secret, 'the secret shown is the one that signs');
  assert.doesNotMatch(await html(s.browser, s.tab), SECRET, 'a reload does not show it');
  assert.doesNotMatch(await html(s.browser, `${s.tab}/${id}`), SECRET, 'nor does the hook’s page');

  // The secret shown verifies a delivery: send a test.
  s.receiver.trust(secret);
  const sent = await s.browser.request(`${s.tab}/${id}/test`, { form: { csrf: s.csrf } });
  assert.equal(sent.status, 303);
  assert.equal(sent.headers.get('location'), `${s.tab}/${id}`);
  const [received] = await s.receiver.waitFor(1);
  assert.equal(received!.verified?.type, 'webhook.test');
  const hookPage = await until('the attempt is listed', async () => {
    const text = await html(s.browser, `${s.tab}/${id}`);
    return /HTTP 200/.test(text) && text;
  });
  assert.match(hookPage, /<span class="item-title">webhook\.test<\/span>\s*<span class="badge verified">delivered<\/span>/);
  assert.match(hookPage, new RegExp(`<code>${received!.id}</code>`), 'the webhook-id the receiver got');
  assert.match(hookPage, /<td>1<\/td>\s*<td><span class="ok">HTTP 200<\/span><\/td>\s*<td>\d+ ms<\/td>\s*<td>[\d-]+ [\d:]+<\/td>/);

  // Rotating: a confirmation, then the new secret once, and the old one no longer shown either.
  const confirm = await html(s.browser, `${s.tab}/${id}/rotate`);
  assert.match(confirm, /Rotate the secret of the hook to http:\/\/127\.0\.0\.1/);
  const rotated = await s.browser.request(`${s.tab}/${id}/rotate`, { form: { csrf: s.csrf } });
  assert.equal(rotated.status, 303);
  const after = await html(s.browser, s.tab);
  const shown = after.match(SECRET) ?? [];
  assert.equal(shown.length, 1);
  assert.notEqual(shown[0], secret);
  assert.match(after, /New secret for http:\/\/127\.0\.0\.1/);
  assert.match(after, /the old secret signs each delivery too/);
  assert.doesNotMatch(await html(s.browser, s.tab), SECRET);
});

test('console webhooks: a refused hook shows the form again (400) with the reason and what was typed, and adds nothing', async (t) => {
  const s = await setUp(t);
  const refused = async (form: Record<string, string | string[]>, reason: RegExp) => {
    const response = await s.browser.request(s.tab, { form: { csrf: s.csrf, ...form } });
    assert.equal(response.status, 400, JSON.stringify(form));
    const text = await response.text();
    assert.match(text, reason);
    assert.doesNotMatch(text, SECRET);
    return text;
  };
  const none = await refused({ url: s.receiver.url, description: 'kept' }, /Choose at least one event\./);
  assert.match(none, new RegExp(`name="url" type="url" required maxlength="2000" value="${s.receiver.url}"`), 'the URL typed stays');
  assert.match(none, /name="description" type="text" maxlength="500" value="kept"/);
  const unknown = await refused(
    { url: s.receiver.url, events: ['page.created', 'page.exploded'] },
    /Events: page\.exploded is not an event; the events are page\.created, .*blog\.restored, \*\./,
  );
  assert.match(unknown, /value="page\.created" checked>/, 'the events ticked stay ticked');
  for (const [form, reason] of refusedValues(s.receiver.url)) await refused(form, reason);
  assert.deepEqual(await listWebhooks(s.a.db.kysely, s.a.site.siteId), []);
});

/** The hook as GET /api/webhooks/<id> gives it, and its stored secret. */
async function apiHook(s: Awaited<ReturnType<typeof setUp>>, id: number) {
  const response = await s.a.app.inject({ url: `/api/webhooks/${id}`, headers: s.a.site.headers });
  assert.equal(response.statusCode, 200, response.body);
  const [hook] = (response.json() as { data: Array<{ url: string; events: string[]; description: string; status: string }> }).data;
  const { secret } = await s.a.db.kysely.selectFrom('webhooks').select('secret').where('id', '=', id).executeTakeFirstOrThrow();
  return { url: hook!.url, events: hook!.events, description: hook!.description, status: hook!.status, secret };
}

test('console webhooks: Edit changes the URL, events and description; the secret stays, is not shown, and still signs', async (t) => {
  const s = await setUp(t);
  const { id, secret } = await addHook(s, ['page.created', 'blog.deleted'], 'Old note');
  const hookPath = `${s.tab}/${id}`;
  assert.match(await html(s.browser, hookPath), new RegExp(`<a class="button secondary small" href="${hookPath}/edit">Edit</a>`));

  const form = await html(s.browser, `${hookPath}/edit`);
  assert.match(form, new RegExp(`<form method="post" action="${hookPath}/edit">`));
  assert.match(form, new RegExp(`name="url" type="url" required maxlength="2000" value="${s.receiver.url}"`), 'prefilled');
  assert.match(form, /value="page\.created" checked>/);
  assert.match(form, /value="blog\.deleted" checked>/);
  assert.doesNotMatch(form, /value="page\.updated" checked>/);
  assert.match(form, /name="description" type="text" maxlength="500" value="Old note"/);
  assert.match(form, /<button type="submit">Save<\/button>/);
  assert.match(form, new RegExp(`<a class="button secondary" href="${hookPath}">Cancel</a>`));
  assert.doesNotMatch(form, SECRET, 'the secret is never shown');

  const url = `http://127.0.0.1:${s.receiver.port}/hook/edited`;
  const saved = await s.browser.request(`${hookPath}/edit`, {
    form: { csrf: s.csrf, url: ` ${url} `, events: ['page.updated', 'blog.restored'], description: ' New note ' },
  });
  assert.equal(saved.status, 303);
  assert.equal(saved.headers.get('location'), hookPath);
  const page = await html(s.browser, hookPath);
  assert.match(page, /<p class="notice" role="status">The hook is saved\.<\/p>/);
  assert.match(page, /<dt>Events<\/dt><dd>page\.updated, blog\.restored<\/dd>/);
  assert.match(page, /<dt>Description<\/dt><dd>New note<\/dd>/);
  assert.doesNotMatch(page, SECRET);
  assert.deepEqual(await apiHook(s, id), {
    url,
    events: ['page.updated', 'blog.restored'],
    description: 'New note',
    status: 'active',
    secret,
  });

  // The old secret still signs, at the new URL.
  s.receiver.trust(secret);
  assert.equal((await s.browser.request(`${hookPath}/test`, { form: { csrf: s.csrf } })).status, 303);
  const [received] = await s.receiver.waitFor(1);
  assert.equal(received!.verified?.type, 'webhook.test');

  // A disabled hook stays disabled through an edit; an empty description clears it.
  assert.equal((await s.browser.request(`${hookPath}/disable`, { form: { csrf: s.csrf } })).status, 303);
  const again = await s.browser.request(`${hookPath}/edit`, { form: { csrf: s.csrf, url, events: '*', description: '' } });
  assert.equal(again.status, 303);
  assert.deepEqual(await apiHook(s, id), { url, events: ['*'], description: '', status: 'disabled', secret });
});

test('console webhooks: a refused edit shows the edit form again (400) with the reason and what was typed, and changes nothing', async (t) => {
  const s = await setUp(t);
  const { id } = await addHook(s, ['page.created'], 'Kept');
  const before = await apiHook(s, id);
  const path = `${s.tab}/${id}/edit`;
  const refused = async (form: Record<string, string | string[]>, reason: RegExp) => {
    const response = await s.browser.request(path, { form: { csrf: s.csrf, ...form } });
    assert.equal(response.status, 400, JSON.stringify(form));
    const text = await response.text();
    assert.match(text, reason);
    assert.match(text, new RegExp(`<form method="post" action="${path}">`), 'the edit form, not the add form');
    assert.doesNotMatch(text, SECRET);
    assert.deepEqual(await apiHook(s, id), before, 'unchanged');
    return text;
  };
  const typed = 'http://127.0.0.1:1/typed';
  const none = await refused({ url: typed, description: 'typed note' }, /Choose at least one event\./);
  assert.match(none, new RegExp(`name="url" type="url" required maxlength="2000" value="${typed}"`), 'the URL typed stays');
  assert.match(none, /name="description" type="text" maxlength="500" value="typed note"/);
  assert.doesNotMatch(none, /checked>/, 'no event ticked, as sent (not the hook’s own)');
  const unknown = await refused({ url: typed, events: ['blog.updated', 'page.exploded'] }, /Events: page\.exploded is not an event/);
  assert.match(unknown, /value="blog\.updated" checked>/, 'the events ticked stay ticked');
  for (const [form, reason] of refusedValues(typed)) await refused(form, reason);
});

test('console webhooks: disable and enable; a disabled hook says why (owner, 410 Gone, failing for 5 days), a failing one says since when', async (t) => {
  const s = await setUp(t);
  const { id, secret } = await addHook(s);
  s.receiver.trust(secret);
  const hookNote = async () => /<p class="status-note[^"]*">([^<]+)<\/p>/.exec(await html(s.browser, s.tab))?.[1];

  const disabled = await s.browser.request(`${s.tab}/${id}/disable`, { form: { csrf: s.csrf } });
  assert.equal(disabled.status, 303);
  assert.equal(disabled.headers.get('location'), s.tab);
  const list = await html(s.browser, s.tab);
  assert.match(list, /is disabled: nothing is sent to it/);
  assert.match(list, /<span class="badge danger">disabled<\/span>/);
  assert.match(String(await hookNote()), /^Disabled by an owner of this website/);
  // Nothing is sent to a disabled hook, a test neither: the page says why.
  const test = await s.browser.request(`${s.tab}/${id}/test`, { form: { csrf: s.csrf } });
  assert.equal(test.status, 303);
  assert.match(
    await html(s.browser, `${s.tab}/${id}`),
    /class="error" role="alert">Webhook \d+ is disabled: enable it \(set its status to active\)/,
  );

  const enabled = await s.browser.request(`${s.tab}/${id}/enable`, { form: { csrf: s.csrf, back: 'hook' } });
  assert.equal(enabled.status, 303);
  assert.equal(enabled.headers.get('location'), `${s.tab}/${id}`, 'back to the hook’s page, where the button was');
  assert.match(await html(s.browser, `${s.tab}/${id}`), /is enabled: its failures are forgotten/);
  assert.equal(await hookNote(), undefined);

  // The receiver answers 410 Gone: the hook is disabled, and the tab says that is why.
  s.receiver.answerWith((_request, response) => response.writeHead(410).end());
  assert.equal((await s.browser.request(`${s.tab}/${id}/test`, { form: { csrf: s.csrf } })).status, 303);
  const gone = await until('disabled by the 410', async () => {
    const note = await hookNote();
    return note?.startsWith('Disabled automatically') && note;
  });
  assert.match(gone, /its receiver answered 410 Gone/);
  assert.match(await html(s.browser, `${s.tab}/${id}`), /<span class="bad">HTTP 410<\/span>/);

  // Failing (the worker's rule, as it leaves the row): first still active, then disabled after 5 days.
  const since = formatTimestamp(new Date(Date.now() - 3 * 86_400_000));
  const hooks = s.a.db.kysely.updateTable('webhooks').where('id', '=', id);
  await hooks.set({ status: 'active', disabled_reason: null, failing_since: since }).execute();
  assert.equal(
    await hookNote(),
    `Failing since ${since} UTC: every attempt since then has failed. If that goes on for 5 days, the hook is disabled.`,
  );
  await hooks.set({ status: 'disabled', disabled_reason: 'failing' }).execute();
  assert.equal(
    await hookNote(),
    `Disabled automatically: every delivery attempt failed for 5 days (failing since ${since} UTC). Enable it once the receiver works again.`,
  );
});

test('console webhooks: a failed delivery is listed with each attempt, and Retry sends it once more', async (t) => {
  const s = await setUp(t);
  const { id, secret } = await addHook(s);
  s.receiver.trust(secret);
  s.receiver.answerWith((_request, response) => response.writeHead(500).end());
  assert.equal((await s.browser.request(`${s.tab}/${id}/test`, { form: { csrf: s.csrf } })).status, 303);
  const failed = await until('the test given up after three attempts', async () => {
    const text = await html(s.browser, `${s.tab}/${id}`);
    return /<span class="badge danger">failed<\/span>/.test(text) && text;
  });
  assert.equal((failed.match(/<span class="bad">HTTP 500<\/span>/g) ?? []).length, 3, 'every attempt, with its status');
  const retryPath = /<form method="post" action="([^"]+\/retry)"/.exec(failed)?.[1];
  const [delivery] = await listDeliveries(s.a.db.kysely, s.a.site.siteId, id, 1);
  assert.equal(retryPath, `${s.tab}/${id}/deliveries/${delivery!.id}/retry`);

  s.receiver.answerWith((_request, response) => response.writeHead(204).end());
  const retried = await s.browser.request(retryPath, { form: { csrf: s.csrf } });
  assert.equal(retried.status, 303);
  assert.equal(retried.headers.get('location'), `${s.tab}/${id}`);
  assert.match(await html(s.browser, `${s.tab}/${id}`), /Delivery \d+ \(webhook\.test\) is sent once more, now\./);
  const [, , , fourth] = await s.receiver.waitFor(4);
  assert.equal(fourth!.id, delivery!.messageId, 'the same webhook-id');
  const delivered = await until('the retry recorded', async () => {
    const text = await html(s.browser, `${s.tab}/${id}`);
    return /HTTP 204/.test(text) && text;
  });
  assert.match(delivered, /<td>4<\/td>\s*<td><span class="ok">HTTP 204<\/span>/);
  assert.doesNotMatch(delivered, /\/retry"/, 'nothing left to retry');

  // While the hook is disabled a retry is refused with the reason, not a 500, and sends nothing.
  assert.equal((await s.browser.request(`${s.tab}/${id}/disable`, { form: { csrf: s.csrf } })).status, 303);
  const refused = await s.browser.request(retryPath, { form: { csrf: s.csrf } });
  assert.equal(refused.status, 303);
  const page = await html(s.browser, `${s.tab}/${id}`);
  assert.match(page, /class="error" role="alert">Webhook \d+ is disabled: enable it \(set its status to active\)/);
  assert.match(page, /Enable the hook to send a test or retry a delivery\./);
  // Nothing to send: the worker sends only pending deliveries, and the refused retry left none.
  const pending = await s.a.db.kysely
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('webhook_id', '=', id)
    .where('state', '=', 'pending')
    .execute();
  assert.deepEqual(pending, [], 'no delivery of the hook is pending');
  assert.equal(s.receiver.received.length, 4);
});

test('console webhooks: delete asks first, then the hook and its deliveries are gone', async (t) => {
  const s = await setUp(t);
  const { id } = await addHook(s);
  const confirm = await html(s.browser, `${s.tab}/${id}/delete`);
  assert.match(confirm, /Delete the hook to http:\/\/127\.0\.0\.1:\d+\/hook\?/);
  assert.match(confirm, new RegExp(`<form method="post" action="${s.tab}/${id}/delete">`));
  const deleted = await s.browser.request(`${s.tab}/${id}/delete`, { form: { csrf: s.csrf } });
  assert.equal(deleted.status, 303);
  assert.match(await html(s.browser, s.tab), /The hook to http:\/\/127\.0\.0\.1:\d+\/hook is deleted\./);
  assert.deepEqual(await listWebhooks(s.a.db.kysely, s.a.site.siteId), []);
  await html(s.browser, `${s.tab}/${id}`, 404);
  assert.equal((await s.browser.request(`${s.tab}/${id}/delete`, { form: { csrf: s.csrf } })).status, 404);
});

test("console webhooks: another website's tab, or its hook under this website's address, is a 404; a POST without the CSRF token is a 403", async (t) => {
  const s = await setUp(t, { twoSites: false });
  const guard = deliveryGuard(s.a.config.webhooks);
  const foreign = await createWebhook(s.a.db.kysely, guard, s.a.site2.siteId, { url: s.receiver.url, events: ['*'] });
  const theirs = `/console/sites/${s.a.site2.siteId}/webhooks`;
  for (const path of [
    theirs,
    `${theirs}/${foreign.id}`,
    `${theirs}/${foreign.id}/delete`,
    `${s.tab}/${foreign.id}`,
    `${s.tab}/${foreign.id}/rotate`,
    `${s.tab}/${foreign.id}/edit`,
    `${theirs}/${foreign.id}/edit`,
    `${s.tab}/01/edit`,
    `${s.tab}/01`,
    `${s.tab}/99999999999`,
  ]) {
    await html(s.browser, path, 404);
  }
  for (const [path, form] of [
    [theirs, { url: s.receiver.url, events: '*' }],
    [`${s.tab}/${foreign.id}/delete`, {}],
    [`${s.tab}/${foreign.id}/disable`, {}],
    [`${s.tab}/${foreign.id}/test`, {}],
    [`${s.tab}/${foreign.id}/rotate`, {}],
    [`${s.tab}/${foreign.id}/edit`, { url: s.receiver.url, events: '*', description: 'taken' }],
    [`${s.tab}/${foreign.id}/edit`, {}],
    [`${theirs}/${foreign.id}/edit`, { url: s.receiver.url, events: '*', description: 'taken' }],
    [`${s.tab}/${foreign.id}/deliveries/1/retry`, {}],
  ] as const) {
    assert.equal((await s.browser.request(path, { method: 'POST', form: { csrf: s.csrf, ...form } })).status, 404, path);
  }
  const [still] = await listWebhooks(s.a.db.kysely, s.a.site2.siteId);
  assert.equal(still?.status, 'active', 'untouched');
  assert.equal(still?.description, '', 'not edited');
  const { secret } = await s.a.db.kysely.selectFrom('webhooks').select('secret').where('id', '=', foreign.id).executeTakeFirstOrThrow();
  assert.equal(secret, foreign.secret, 'not rotated');

  for (const csrf of [undefined, 'forged']) {
    const response = await s.browser.request(s.tab, { form: { url: s.receiver.url, events: '*', ...(csrf ? { csrf } : {}) } });
    assert.equal(response.status, 403);
  }
  const { id } = await addHook(s);
  assert.equal((await s.browser.request(`${s.tab}/${id}/delete`, { method: 'POST', form: {} })).status, 403);
  assert.equal((await s.browser.request(`${s.tab}/${id}/disable`, { form: { csrf: 'forged' } })).status, 403);
  for (const csrf of [undefined, 'forged']) {
    const form = { url: `${s.receiver.url}/forged`, events: 'page.deleted', description: 'forged', ...(csrf ? { csrf } : {}) };
    assert.equal((await s.browser.request(`${s.tab}/${id}/edit`, { form })).status, 403);
  }
  const [kept] = await listWebhooks(s.a.db.kysely, s.a.site.siteId);
  assert.deepEqual([kept?.url, kept?.events, kept?.description], [s.receiver.url, ['*'], ''], 'not edited without the token');
  assert.deepEqual(
    (await listWebhooks(s.a.db.kysely, s.a.site.siteId)).map((h) => h.status),
    ['active'],
    'one hook, the form’s, still active',
  );
});
