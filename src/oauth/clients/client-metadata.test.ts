import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../../config.js';
import { memoryRateLimits } from '../../http/memory-rate-limits.js';
import { OutboundError, type OutboundFetch } from '../../http/outbound.js';
import { clientMetadataDocuments, DOCUMENT_FETCHES_PER_MINUTE, FailedDocuments } from './client-metadata.js';

const CONFIG = { oauth: { dynamicRegistration: true, clientMetadataDocuments: true } } as Config;

/** What the provider's request context gives allowFetch: the caller's address and a per-request state. */
const request = (ip = '198.51.100.7') => ({ ip, state: {} }) as unknown as KoaContextWithOIDC;

/** An OAuth error: its code, and a description that matches. */
const oauthError = (code: string, description: RegExp) => (error: Error & { error?: string; error_description?: string }) => {
  assert.equal(error.error, code);
  assert.match(error.error_description ?? '', description);
  return true;
};

/** The feature with a fetch that answers `status` (or throws), counting what it was asked. */
function documents(answer: number | Error = 200) {
  const fetched: string[] = [];
  const fetch: OutboundFetch = async (url) => {
    fetched.push(String(url));
    if (answer instanceof Error) throw answer;
    return new Response('{}', { status: answer });
  };
  const failures = new FailedDocuments();
  const built = clientMetadataDocuments(CONFIG, { limits: memoryRateLimits(), fetch, failures });
  const allowFetch = built.feature?.allowFetch as (ctx: KoaContextWithOIDC | undefined, id: string) => Promise<boolean>;
  const providerFetch = (url: string) =>
    built.fetch!(url, { method: 'GET', headers: new Headers(), signal: AbortSignal.timeout(2500) } as never);
  return { allowFetch, providerFetch, fetched, failures };
}

test('metadata documents: a failed fetch is remembered per URL, and a 200 is not', async () => {
  for (const answer of [404, 500, new OutboundError('agent.test resolves to 127.0.0.1, which is not a public address')]) {
    const d = documents(answer);
    const url = 'https://agent.test/client.json';
    assert.equal(await d.allowFetch(request(), url), true);
    await d.providerFetch(url).catch(() => undefined);
    assert.ok(d.failures.secondsLeft(url) > 0, String(answer));
    await assert.rejects(
      d.allowFetch(request(), url),
      oauthError('invalid_client', /could not be used; it is not fetched again for \d+ seconds/),
    );
    assert.equal(d.fetched.length, 1);
    assert.equal(await d.allowFetch(request(), 'https://agent.test/other.json'), true, 'only that URL');
  }
  const ok = documents(200);
  await ok.providerFetch('https://agent.test/client.json');
  assert.equal(ok.failures.secondsLeft('https://agent.test/client.json'), 0);
});

test('metadata documents: asked again in the same request, the document counts as failed (oidc-provider found it invalid)', async () => {
  const d = documents(200);
  const ctx = request();
  const url = 'https://agent.test/client.json';
  assert.equal(await d.allowFetch(ctx, url), true);
  // The authorization error handler looks the client up again after the document was refused.
  await assert.rejects(d.allowFetch(ctx, url), oauthError('invalid_client', /not fetched again/));
  assert.ok(d.failures.secondsLeft(url) > 0);
  await assert.rejects(d.allowFetch(request(), url), oauthError('invalid_client', /not fetched again/), 'nor by the next request');
});

test('metadata documents: each address may cause a few fetches a minute; a refusal is not counted twice in one request', async () => {
  const d = documents(200);
  for (let i = 0; i < DOCUMENT_FETCHES_PER_MINUTE; i++) assert.equal(await d.allowFetch(request(), `https://agent.test/${i}.json`), true);
  const ctx = request();
  const refused = await d.allowFetch(ctx, 'https://agent.test/one-more.json').catch((error: Error) => error);
  assert.ok(refused instanceof Error);
  oauthError('temporarily_unavailable', /more than 10 new client_id metadata documents in a minute; try again in \d+ seconds/)(refused);
  assert.equal(
    await d.allowFetch(ctx, 'https://agent.test/one-more.json').catch((error: Error) => error),
    refused,
    'the same answer again',
  );
  assert.equal(d.failures.secondsLeft('https://agent.test/one-more.json'), 0, 'a refusal is not a failed document');
  assert.equal(await d.allowFetch(request('203.0.113.9'), 'https://agent.test/one-more.json'), true, 'another address has its own count');
  assert.equal(
    await d.allowFetch(undefined, 'https://agent.test/consent.json'),
    true,
    'outside a provider request (consent) nothing is counted',
  );
});

test('FailedDocuments: a failure lapses after its window, and the map keeps at most its bound, forgetting the oldest', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const short = new FailedDocuments(30);
  short.add('https://a.example/');
  assert.equal(short.secondsLeft('https://a.example/'), 30);
  t.mock.timers.tick(29_999);
  assert.equal(short.secondsLeft('https://a.example/'), 1, 'not before the window ends');
  t.mock.timers.tick(1);
  assert.equal(short.secondsLeft('https://a.example/'), 0);

  const small = new FailedDocuments(30, 3);
  for (const name of ['a', 'b', 'c', 'd']) small.add(`https://${name}.example/`);
  assert.equal(small.secondsLeft('https://a.example/'), 0, 'the oldest was forgotten');
  for (const name of ['b', 'c', 'd']) assert.ok(small.secondsLeft(`https://${name}.example/`) > 0, name);
});
