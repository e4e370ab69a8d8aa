import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json } from '../../test/helpers.js';
import { until } from '../../test/until.js';
import { webhookReceiver } from '../../test/webhook-receiver.js';
import { testConfig, type WebhookConfig } from '../config.js';
import { deliveryGuard } from './webhook.guard.js';

/** A fake DNS: each name answers what the test says at the time it is asked. */
function fakeDns(answers: Record<string, string>) {
  const resolve = async (hostname: string) => {
    const address = answers[hostname];
    if (!address) throw new Error(`ENOTFOUND ${hostname}`);
    return [{ address, family: address.includes(':') ? 6 : 4 }];
  };
  return { answers, resolve };
}

function config(overrides: Partial<WebhookConfig>) {
  return { webhooks: { ...testConfig().webhooks, pollMs: 20, retrySchedule: [], ...overrides } };
}

/** The app, with its webhook guard asking `dns` instead of the system's resolver. */
function withDns(dns: ReturnType<typeof fakeDns>, overrides: Partial<WebhookConfig> = {}) {
  const settings = config(overrides);
  return { config: settings, webhookGuard: deliveryGuard(settings.webhooks, { resolve: dns.resolve }) };
}

test('hooks may only point at public https addresses: private, loopback, link-local and metadata targets and plain http are refused', async (t) => {
  const dns = fakeDns({ 'public.example': '93.184.215.14', 'inside.example': '10.0.0.5', 'metadata.example': '169.254.169.254' });
  const { app, site } = await buildTestApp(t, withDns(dns));
  const create = (url: string) =>
    app.inject({ method: 'POST', url: '/api/webhooks', headers: site.headers, payload: { url, events: ['*'] } });
  const refused: Array<[string, RegExp]> = [
    ['http://public.example/hook', /only https/],
    ['https://127.0.0.1/hook', /127\.0\.0\.1.*not a public address/],
    ['https://[::1]/hook', /not a public address/],
    ['https://10.0.0.1/hook', /not a public address/],
    ['https://192.168.1.10/hook', /not a public address/],
    ['https://[fd00::1]/hook', /not a public address/],
    ['https://169.254.169.254/latest/meta-data', /not a public address/],
    ['https://inside.example/hook', /10\.0\.0\.5, which is not a public address/],
    ['https://metadata.example/hook', /169\.254\.169\.254/],
    ['https://2130706433/hook', /127\.0\.0\.1/],
    ['https://nowhere.example/hook', /could not be resolved/],
    ['https://user:pass@public.example/hook', /credentials/],
  ];
  // Where the development setting would allow the target, the message names it; elsewhere it would mislead.
  const settingAllows = new Set([
    'https://127.0.0.1/hook',
    'https://[::1]/hook',
    'https://10.0.0.1/hook',
    'https://192.168.1.10/hook',
    'https://[fd00::1]/hook',
    'https://inside.example/hook',
    'https://2130706433/hook',
    'http://inside.example/hook',
  ]);
  for (const [url, reason] of [...refused, ['http://inside.example/hook', /only https/] as [string, RegExp]]) {
    const response = await create(url);
    assert.equal(response.statusCode, 400, url);
    const [error] = json(response).errors;
    assert.equal(error.field, 'url', url);
    assert.match(error.message, reason, url);
    (settingAllows.has(url) ? assert.match : assert.doesNotMatch)(error.message, /WEBHOOK_ALLOW_PRIVATE_TARGETS=true/, url);
  }
  const accepted = await create('https://public.example/hook');
  assert.equal(accepted.statusCode, 201, accepted.body);
  const hook = json(accepted).data[0];
  const moved = await app.inject({
    method: 'PATCH',
    url: `/api/webhooks/${hook.id}`,
    headers: site.headers,
    payload: { url: 'https://inside.example/hook' },
  });
  assert.equal(moved.statusCode, 400, 'a PATCH is checked too');
});

test('DNS rebinding: a name that was public when the hook was made and resolves to loopback at delivery is not connected to', async (t) => {
  const dns = fakeDns({ 'rebind.example': '93.184.215.14' });
  const ctx = await buildTestApp(t, withDns(dns));
  const { app, site } = ctx;
  const created = await app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: site.headers,
    payload: { url: 'https://rebind.example/hook', events: ['*'] },
  });
  assert.equal(created.statusCode, 201, created.body);
  const hook = json(created).data[0];
  dns.answers['rebind.example'] = '127.0.0.1';
  await app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'P' } });
  type Delivery = { state: string; attempts: { error: string | null; statusCode: number | null }[] };
  // The app's worker attempts it in its own time (no retries configured: one attempt and it fails).
  const delivery = await until('the delivery given up', async () => {
    const [one] = json(await app.inject({ url: `/api/webhooks/${hook.id}/deliveries`, headers: site.headers })).data as Delivery[];
    return one?.state === 'failed' && one;
  });
  assert.equal(delivery.attempts[0]!.statusCode, null);
  assert.match(String(delivery.attempts[0]!.error), /rebind\.example resolves to 127\.0\.0\.1, which is not a public address/);
});

test('WEBHOOK_ALLOW_PRIVATE_TARGETS allows private targets and plain http to them, never to a public host nor link-local', async (t) => {
  const dns = fakeDns({ 'public.example': '93.184.215.14', 'inside.example': '10.0.0.5' });
  const { app, site } = await buildTestApp(t, withDns(dns, { allowPrivateTargets: true }));
  const receiver = await webhookReceiver(t);
  const create = (url: string) =>
    app.inject({ method: 'POST', url: '/api/webhooks', headers: site.headers, payload: { url, events: ['*'] } });
  for (const url of [receiver.url, 'http://inside.example/hook', 'https://10.0.0.1/hook', 'http://[::1]:9/hook']) {
    assert.equal((await create(url)).statusCode, 201, url);
  }
  for (const [url, reason] of [
    ['http://public.example/hook', /public address: only https/],
    ['http://169.254.169.254/latest/meta-data', /not a public address/],
    ['https://[fe80::1]/hook', /not a public address/],
    ['http://224.0.0.1/hook', /not a public address/],
  ] as const) {
    const response = await create(url);
    assert.equal(response.statusCode, 400, url);
    assert.match(json(response).errors[0].message, reason, url);
  }
});
