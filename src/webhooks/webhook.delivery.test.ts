import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { buildTestApp, json, type TestApp } from '../../test/helpers.js';
import { connect, revokeInConsole, startOAuthApp } from '../../test/oauth.helpers.js';
import { until } from '../../test/until.js';
import { webhookReceiver } from '../../test/webhook-receiver.js';
import { createCredential, revokeCredential } from '../accounts/account.service.js';
import { type Config, testConfig, type WebhookConfig } from '../config.js';
import { formatTimestamp } from '../db/time.js';
import { deliveryGuard } from './webhook.guard.js';

function hookConfig(overrides: Partial<WebhookConfig> = {}): Partial<Config> {
  return { webhooks: { ...testConfig().webhooks, allowPrivateTargets: true, pollMs: 20, retrySchedule: [0.3, 0.6], ...overrides } };
}

/** `guard`: what the delivery guard does differently (deliveryGuard's tests argument). */
async function setUp(t: TestContext, overrides: Partial<WebhookConfig> = {}, events = ['*'], guard?: Parameters<typeof deliveryGuard>[1]) {
  const config = hookConfig(overrides);
  const test = await buildTestApp(t, {
    config,
    ...(guard && config.webhooks ? { webhookGuard: deliveryGuard(config.webhooks, guard) } : {}),
  });
  const receiver = await webhookReceiver(t);
  const hook = await createHook(test, receiver.url, events);
  receiver.trust(hook.secret);
  return { ...test, receiver, hook };
}

async function createHook({ app, site }: TestApp, url: string, events: string[]): Promise<{ id: number; secret: string }> {
  const response = await app.inject({ method: 'POST', url: '/api/webhooks', headers: site.headers, payload: { url, events } });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

async function writePage({ app, site }: TestApp, title = 'A page'): Promise<number> {
  const response = await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: title } });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0].page;
}

async function deliveries({ app, site }: TestApp, id: number) {
  const response = await app.inject({ url: `/api/webhooks/${id}/deliveries`, headers: site.headers });
  assert.equal(response.statusCode, 200, response.body);
  return json(response).data;
}

async function hookOf({ app, site }: TestApp, id: number) {
  return json(await app.inject({ url: `/api/webhooks/${id}`, headers: site.headers })).data[0];
}

test('a change is delivered signed as Standard Webhooks says, with the small body, only for the events asked', async (t) => {
  const ctx = await setUp(t, {}, ['page.created', 'page.deleted']);
  const { app, site, receiver, hook } = ctx;
  const before = Math.floor(Date.now() / 1000); // the clock as data: the webhook-timestamp is the time of sending
  const page = await writePage(ctx);
  await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { id: page, page_usertitle: 'Renamed' } });
  const deleted = await app.inject({ method: 'DELETE', url: `/api/page/${page}`, headers: site.headers });
  assert.equal(deleted.statusCode, 204);
  // The outbox is written with each change: the update, not asked for, queued nothing.
  assert.deepEqual(
    (await deliveries(ctx, hook.id)).map((d: { event: string }) => d.event),
    ['page.deleted', 'page.created'],
    'the update was not asked for',
  );
  const [created, gone] = await receiver.waitFor(2);
  const after = Math.ceil(Date.now() / 1000);
  for (const one of [created!, gone!]) {
    assert.ok(one.verified, 'verified with standardwebhooks');
    assert.match(one.id, /^msg_/);
    assert.match(one.signature, /^v1,[A-Za-z0-9+/]+=*$/);
    assert.ok(one.timestamp >= before && one.timestamp <= after, `sent between the write and its receipt: ${one.timestamp}`);
  }
  const ordered = [created!, gone!].sort((a, b) => Number(a.verified!.data.seq) - Number(b.verified!.data.seq));
  assert.deepEqual(ordered[0]!.verified!.type, 'page.created');
  const { timestamp, ...rest } = ordered[0]!.verified!;
  assert.ok(!Number.isNaN(Date.parse(timestamp)));
  assert.deepEqual(rest, {
    type: 'page.created',
    data: { type: 'page', id: page, seq: 1, op: 'create', actor: { kind: 'api-key', id: site.apiId, name: 'test' }, revision: 1 },
  });
  assert.deepEqual(ordered[1]!.verified!.data, {
    type: 'page',
    id: page,
    seq: 3,
    op: 'delete',
    actor: { kind: 'api-key', id: site.apiId, name: 'test' },
    revision: 3,
  });
  const listed = await until('both deliveries recorded', async () => {
    const list = await deliveries(ctx, hook.id);
    return list.every((d: { state: string }) => d.state === 'delivered') && list;
  });
  assert.equal(listed.length, 2);
  assert.deepEqual(
    listed.map((d: { event: string; attempts: { attempt: number; statusCode: number; error: null }[] }) => [
      d.event,
      d.attempts.map((a) => [a.attempt, a.statusCode, a.error]),
    ]),
    [
      ['page.deleted', [[1, 200, null]]],
      ['page.created', [[1, 200, null]]],
    ],
  );
});

test('a failed delivery is retried with the same webhook-id on the schedule, and a failure with no retry left is given up; retry sends it again', async (t) => {
  const ctx = await setUp(t);
  const { app, site, receiver, hook } = ctx;
  const statuses = [500, 502, 200];
  receiver.answerWith((_request, response) => response.writeHead(statuses.shift() ?? 500).end());
  await writePage(ctx);
  const three = await receiver.waitFor(3);
  assert.ok(three.every((r) => r.verified));
  assert.equal(new Set(three.map((r) => r.id)).size, 1, 'one webhook-id across retries');
  // Not before the schedule's delay, less its jitter (the delays themselves: webhook.worker.test.ts).
  const gaps = [three[1]!.at - three[0]!.at, three[2]!.at - three[1]!.at];
  assert.ok(gaps[0]! >= 0.3 * 0.9 * 1000 - 5, `first retry after ~300 ms, was ${gaps[0]}`);
  assert.ok(gaps[1]! >= 0.6 * 0.9 * 1000 - 5, `second retry after ~600 ms, was ${gaps[1]}`);
  const [delivered] = await until('recorded', async () => {
    const list = await deliveries(ctx, hook.id);
    return list[0]?.state === 'delivered' && list;
  });
  assert.deepEqual(
    delivered.attempts.map((a: { statusCode: number }) => a.statusCode),
    [500, 502, 200],
  );
  assert.equal((await hookOf(ctx, hook.id)).failingSince, null, 'a success ends the run of failures');

  // Every attempt fails: one try and two retries, then it is given up.
  receiver.answerWith((_request, response) => response.writeHead(500).end());
  await writePage(ctx, 'Second');
  await receiver.waitFor(6);
  const [failed] = await until('given up', async () => {
    const list = await deliveries(ctx, hook.id);
    return list[0]?.state === 'failed' && list;
  });
  // Given up is final: no poll claims a delivery that is not pending.
  assert.equal(failed.attempts.length, 3);
  assert.equal(receiver.received.length, 6, 'nothing after the schedule ends');
  assert.ok((await hookOf(ctx, hook.id)).failingSince, 'the hook says since when it has been failing');

  receiver.answerWith((_request, response) => response.writeHead(204).end());
  const retried = await app.inject({
    method: 'POST',
    url: `/api/webhooks/${hook.id}/deliveries/${failed.id}/retry`,
    headers: site.headers,
  });
  assert.equal(retried.statusCode, 202, retried.body);
  const again = await receiver.waitFor(7);
  assert.equal(again[6]!.id, failed.messageId, 'the same webhook-id');
  await until('delivered after the retry', async () => (await deliveries(ctx, hook.id))[0]?.state === 'delivered');
  const pending = await app.inject({ method: 'POST', url: `/api/webhooks/${hook.id}/deliveries/999999/retry`, headers: site.headers });
  assert.equal(pending.statusCode, 404);
  assert.equal(
    json(pending).detail,
    `Webhook ${hook.id} has no delivery 999999: GET /api/webhooks/${hook.id}/deliveries lists its deliveries.`,
  );
});

test('retrying a delivery that is still pending is a 409 that says it will be sent anyway', async (t) => {
  const ctx = await setUp(t, { retrySchedule: [3600] });
  const { app, site, receiver, hook } = ctx;
  receiver.answerWith((_request, response) => response.writeHead(500).end());
  await writePage(ctx);
  const [waiting] = await until('failed once, its retry an hour away', async () => {
    const list = await deliveries(ctx, hook.id);
    return list[0]?.attempts.length === 1 && list[0].state === 'pending' && list;
  });
  const retried = await app.inject({
    method: 'POST',
    url: `/api/webhooks/${hook.id}/deliveries/${waiting.id}/retry`,
    headers: site.headers,
  });
  assert.equal(retried.statusCode, 409, retried.body);
  assert.equal(
    json(retried).detail,
    `Delivery ${waiting.id} of webhook ${hook.id} is already pending: it will be sent again at its next attempt, so there is nothing to retry.`,
  );
});

test('Retry-After on 429 and 503 is honoured in place of the schedule', async (t) => {
  const ctx = await setUp(t, { retrySchedule: [0.05] });
  const { receiver } = ctx;
  const answers = [503, 200];
  receiver.answerWith((_request, response) => {
    const status = answers.shift() ?? 200;
    response.writeHead(status, status === 503 ? { 'retry-after': '1' } : {}).end();
  });
  await writePage(ctx);
  const [first, second] = await receiver.waitFor(2, 5000);
  assert.ok(second!.at - first!.at >= 990, `waited ${second!.at - first!.at} ms for Retry-After: 1`);
});

test('a 410 disables the hook, and so does failing without a break for 5 days; the API says why', async (t) => {
  const ctx = await setUp(t);
  const { app, site, db, receiver, hook } = ctx;
  receiver.answerWith((_request, response) => response.writeHead(410).end());
  await writePage(ctx);
  await receiver.waitFor(1);
  const gone = await until('disabled', async () => {
    const h = await hookOf(ctx, hook.id);
    return h.status === 'disabled' && h;
  });
  assert.equal(gone.disabledReason, 'gone');
  await writePage(ctx, 'Not sent');
  // The outbox is written with the change: a disabled hook is queued nothing.
  assert.equal((await deliveries(ctx, hook.id)).length, 1, 'a disabled hook gets nothing');
  const sendTest = await app.inject({ method: 'POST', url: `/api/webhooks/${hook.id}/test`, headers: site.headers });
  assert.equal(sendTest.statusCode, 409);
  assert.equal(json(sendTest).detail, `Webhook ${hook.id} is disabled: enable it (set its status to active) before sending a test.`);

  // Enabled again, it starts afresh; a run of failures older than 5 days disables it.
  receiver.answerWith((_request, response) => response.writeHead(500).end());
  const enabled = await app.inject({
    method: 'PATCH',
    url: `/api/webhooks/${hook.id}`,
    headers: site.headers,
    payload: { status: 'active' },
  });
  assert.equal(json(enabled).data[0].disabledReason, null);
  await db.kysely
    .updateTable('webhooks')
    .set({ failing_since: formatTimestamp(new Date(Date.now() - 5 * 24 * 3600 * 1000 - 60_000)) })
    .where('id', '=', hook.id)
    .execute();
  await writePage(ctx, 'Fails');
  const failing = await until('disabled for failing', async () => {
    const h = await hookOf(ctx, hook.id);
    return h.status === 'disabled' && h;
  });
  assert.equal(failing.disabledReason, 'failing');
  assert.equal(receiver.received.length, 2);
  const [given] = await deliveries(ctx, hook.id);
  await until('its pending delivery is given up', async () => (await deliveries(ctx, hook.id))[0]?.state === 'failed');
  assert.equal(given.event, 'page.created');
});

test('a hook sends under the credential that created it: once that API key is revoked, or that OAuth connection, it is disabled and sends nothing more', async (t) => {
  const a = await startOAuthApp(t, { config: hookConfig() });
  const receiver = await webhookReceiver(t);
  const api = (headers: Record<string, string>, method: string, url: string, payload?: object) =>
    fetch(`${a.base}${url}`, {
      method,
      headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) },
      ...(payload ? { body: JSON.stringify(payload) } : {}),
    }).then(async (response) => ({ status: response.status, body: json({ body: (await response.text()) || 'null' }) }));
  const owner = a.site.headers;
  const status = async (id: number) => (await api(owner, 'GET', `/api/webhooks/${id}`)).body.data[0];
  const write = async (title: string) => assert.equal((await api(owner, 'POST', '/api/page', { page_usertitle: title })).status, 201);

  // An API key's hook: delivered while the key is live; the key revoked, the next change disables it unsent.
  const key = await createCredential(a.db.kysely, a.site.siteId, 'integration');
  const keyHeaders = { apiID: key.apiId, apiKey: key.apiKey };
  const byKey = await api(keyHeaders, 'POST', '/api/webhooks', { url: receiver.url, events: ['*'] });
  assert.equal(byKey.status, 201, JSON.stringify(byKey.body));
  await write('Before the revocation');
  await receiver.waitFor(1);
  await revokeCredential(a.db.kysely, key.apiId);
  await write('After the revocation');
  const revoked = await until('the key’s hook disabled', async () => {
    const hook = await status(byKey.body.data[0].id);
    return hook.status === 'disabled' && hook;
  });
  assert.equal(revoked.disabledReason, 'revoked');
  assert.equal(receiver.received.length, 1, 'nothing was sent after the key was revoked');

  // Enabled again with another credential, it sends under that one.
  const enabled = await api(owner, 'PATCH', `/api/webhooks/${byKey.body.data[0].id}`, { status: 'active' });
  assert.equal(enabled.body.data[0].status, 'active');
  await write('Enabled by the owner’s key');
  await receiver.waitFor(2);

  // An OAuth application's hook: revoking the application in the console ends it too.
  const { tokens } = await connect(a, { scope: 'everything:write' });
  const bearer = { authorization: `Bearer ${tokens.access_token}` };
  const byApp = await api(bearer, 'POST', '/api/webhooks', { url: receiver.url, events: ['page.created'] });
  assert.equal(byApp.status, 201, JSON.stringify(byApp.body));
  await write('Seen by both');
  await receiver.waitFor(4);
  await revokeInConsole(a, a.site.siteId, a.clientId);
  await write('Not for the application');
  await receiver.waitFor(5);
  const appHook = await until('the application’s hook disabled', async () => {
    const hook = await status(byApp.body.data[0].id);
    return hook.status === 'disabled' && hook;
  });
  assert.equal(appHook.disabledReason, 'revoked');
  const sent = (await api(owner, 'GET', `/api/webhooks/${byApp.body.data[0].id}/deliveries`)).body.data;
  assert.deepEqual(
    sent.map((d: { state: string; attempts: unknown[] }) => [d.state, d.attempts.length]),
    [
      ['failed', 0],
      ['delivered', 1],
    ],
    'the change after the revocation was never attempted',
  );
  const ownerHook = byKey.body.data[0].id;
  await until('the owner’s hook has nothing pending', async () =>
    (await api(owner, 'GET', `/api/webhooks/${ownerHook}/deliveries`)).body.data.every((d: { state: string }) => d.state !== 'pending'),
  );
  assert.equal(receiver.received.length, 5, 'the hook the owner enabled went on');
});

test('an attempt under way when its hook is disabled, then answered 2xx, leaves its delivery delivered: the receiver has it', async (t) => {
  const ctx = await setUp(t);
  const { app, site, receiver, hook } = ctx;
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  receiver.answerWith((_request, response) => void held.then(() => response.writeHead(200).end()));
  await writePage(ctx);
  await receiver.waitFor(1);
  const disabled = await app.inject({
    method: 'PATCH',
    url: `/api/webhooks/${hook.id}`,
    headers: site.headers,
    payload: { status: 'disabled' },
  });
  assert.equal(json(disabled).data[0].status, 'disabled');
  assert.equal((await deliveries(ctx, hook.id))[0].state, 'failed', 'disabling gives up what is pending');
  release();
  const [delivered] = await until('the 200 is recorded', async () => {
    const list = await deliveries(ctx, hook.id);
    return list[0]?.attempts.length === 1 && list;
  });
  assert.equal(delivered.state, 'delivered');
  assert.equal(delivered.attempts[0].statusCode, 200);
  assert.equal((await hookOf(ctx, hook.id)).status, 'disabled', 'the hook stays disabled');
  assert.equal(receiver.received.length, 1);
});

test('after a rotation the old and the new secret both sign; a receiver with either verifies', async (t) => {
  const ctx = await setUp(t);
  const { app, site, receiver, hook } = ctx;
  const rotated = await app.inject({ method: 'POST', url: `/api/webhooks/${hook.id}/rotate-secret`, headers: site.headers });
  assert.equal(rotated.statusCode, 200);
  const secret = json(rotated).data[0].secret as string;
  assert.match(secret, /^whsec_/);
  assert.notEqual(secret, hook.secret);
  receiver.trust(hook.secret);
  await writePage(ctx);
  const [old] = await receiver.waitFor(1);
  assert.equal(old!.verifiedBy, 0, 'the old secret still verifies');
  assert.equal(old!.signature.split(' ').length, 2, 'two signatures');
  receiver.trust(secret);
  await writePage(ctx, 'Second');
  const [, fresh] = await receiver.waitFor(2);
  assert.equal(fresh!.verifiedBy, 0, 'the new secret verifies');

  // Once the overlap has passed only the new secret signs.
  await ctx.db.kysely
    .updateTable('webhooks')
    .set({ previous_secret_until: formatTimestamp(new Date(Date.now() - 1000)) })
    .where('id', '=', hook.id)
    .execute();
  receiver.trust(hook.secret);
  await writePage(ctx, 'Third');
  const [, , third] = await receiver.waitFor(3);
  assert.equal(third!.verifiedBy, -1, 'the old secret no longer verifies');
  assert.equal(third!.signature.split(' ').length, 1);
});

test('a test delivery reaches the hook; deliveries are not sent to receivers that redirect', async (t) => {
  const ctx = await setUp(t, { retrySchedule: [] }, ['blog.created']);
  const { app, site, receiver, hook } = ctx;
  const sent = await app.inject({ method: 'POST', url: `/api/webhooks/${hook.id}/test`, headers: site.headers });
  assert.equal(sent.statusCode, 202, sent.body);
  const [one] = await receiver.waitFor(1);
  assert.equal(one!.verified!.type, 'webhook.test');
  receiver.answerWith((_request, response) => response.writeHead(302, { location: 'http://169.254.169.254/' }).end());
  await app.inject({ method: 'POST', url: `/api/webhooks/${hook.id}/test`, headers: site.headers });
  const [latest] = await until('the redirect recorded as a failure', async () => {
    const list = await deliveries(ctx, hook.id);
    return list[0]?.state === 'failed' && list;
  });
  assert.match(latest.attempts[0].error, /redirects are not followed/);
});

test('writes answer whatever the receivers do: a receiver that never answers holds up no write', async (t) => {
  const ctx = await setUp(t, {}, ['*'], { timeoutMs: 60_000 });
  const { receiver, hook } = ctx;
  // This receiver never answers: each attempt waits for the guard's time limit.
  receiver.answerWith(() => {});
  for (let i = 0; i < 10; i++) await writePage(ctx, `Page ${i}`);
  await receiver.waitFor(1);
  assert.equal((await deliveries(ctx, hook.id)).length, 10, 'every write answered and queued its delivery');
  // How many attempts run at once to one hook: webhook.worker.test.ts, a poll at a time.
});

test('a hook made with a limited credential is sent only the events of what that credential may read', async (t) => {
  const test = await buildTestApp(t, { config: hookConfig() });
  const { app, site } = test;
  const receiver = await webhookReceiver(t);
  const headersOf = (k: { apiId: string; apiKey: string }) => ({ apiID: k.apiId, apiKey: k.apiKey });
  const hookWith = async (scopes: string[]) => {
    const key = await createCredential(test.db.kysely, site.siteId, scopes.join(' '), null, scopes);
    const response = await app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: headersOf(key),
      payload: { url: receiver.url, events: ['*'] },
    });
    assert.equal(response.statusCode, 201, response.body);
    return json(response).data[0].id as number;
  };
  const pagesOnly = await hookWith(['webhooks:manage', 'pages:read']);
  const blogsOnly = await hookWith(['webhooks:manage', 'blogs:write']);
  const feed = await hookWith(['webhooks:manage', 'history:read']);
  const manageOnly = await hookWith(['webhooks:manage']);
  const everything = await createHook(test, receiver.url, ['*']);

  const page = await writePage(test);
  const blog = await app.inject({ method: 'POST', url: '/api/blog', headers: site.headers, payload: { page, info_title: 'News' } });
  assert.equal(blog.statusCode, 201, blog.body);
  const events = async (id: number) => (await deliveries(test, id)).map((d: { event: string }) => d.event).sort();
  assert.deepEqual(await events(pagesOnly), ['page.created'], 'pages:read reads no blog');
  assert.deepEqual(await events(blogsOnly), ['blog.created'], 'blogs:write carries blogs:read, and reads no page');
  assert.deepEqual(await events(feed), ['blog.created', 'page.created'], 'the feed names every change');
  assert.deepEqual(await events(manageOnly), [], 'managing hooks reads nothing');
  assert.deepEqual(await events(everything.id), ['blog.created', 'page.created'], 'a key made without scopes reads everything');
});
