// The SDK's transport with a fake fetch: retries on 429 and 503 for idempotent requests only, as
// Retry-After asks (the clock is mocked: no test waits for real time), timeouts and AbortSignal.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { CmsClient, ProblemError, retryAfterMs, verifyWebhook, WebhookVerificationError } from '../../client/src/index.js';

const PROBLEM = { 'content-type': 'application/problem+json', 'x-request-id': 'req-1' };

function problem(status: number, headers: Record<string, string> = {}): Response {
  const title = status === 429 ? 'Too many requests' : 'Service unavailable';
  const type = `/problems/${title.toLowerCase().replaceAll(' ', '-')}`;
  return new Response(JSON.stringify({ type, title, status, detail: 'later', instance: '/api/page' }), {
    status,
    headers: { ...PROBLEM, ...headers },
  });
}

const ok = () => new Response(JSON.stringify({ data: [], meta: { pageSize: 200, total: 0, offset: 0 } }), { status: 200 });

/** A fetch that answers from a list, and records each request and when (by the mocked clock) it was sent. */
function fakeFetch(answers: Array<() => Response>) {
  const requests: Request[] = [];
  const sentAt: number[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    requests.push(new Request(input, init));
    sentAt.push(Date.now());
    const next = answers.shift();
    if (!next) throw new Error('no more answers');
    return next();
  };
  return { fetch: fetch as typeof globalThis.fetch, requests, sentAt };
}

/** Lets the client's pending promises run up to its next timer. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function mockClock(t: TestContext) {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.parse('2026-12-01T12:00:00Z') });
}

/**
 * Moves the mocked clock on in steps of 10 ms until `done()` holds, letting the client's promises
 * run after each step: the client sets its timer only once it has read an answer, which takes a
 * number of turns of the event loop that no test should count on. Returns the milliseconds moved.
 */
async function advanceUntil(t: TestContext, done: () => boolean): Promise<number> {
  let moved = 0;
  await settle();
  while (!done()) {
    if (moved > 24 * 3600_000) throw new Error('a day of mocked time went by and the client did not get there');
    t.mock.timers.tick(10);
    moved += 10;
    await settle();
  }
  return moved;
}

/** Whether a promise has settled, read synchronously. */
function tracked<T>(promise: Promise<T>): { promise: Promise<T>; done: () => boolean } {
  let settled = false;
  const tracking = promise.finally(() => {
    settled = true;
  });
  return { promise: tracking, done: () => settled };
}

test('a GET answered 503 with Retry-After is sent again after that many seconds, not before', async (t) => {
  mockClock(t);
  const { fetch, requests, sentAt } = fakeFetch([() => problem(503, { 'retry-after': '3' }), ok]);
  const cms = new CmsClient({ baseUrl: 'https://cms.example', fetch });
  const listed = cms.pages.list();
  await advanceUntil(t, () => requests.length === 2);
  const waited = sentAt[1]! - sentAt[0]!;
  assert.ok(waited >= 3000, `not before Retry-After: sent again after ${waited} ms`);
  assert.ok(waited < 6000, `soon after Retry-After: sent again after ${waited} ms`);
  assert.deepEqual((await listed).data, []);
  assert.equal(requests.length, 2);
});

test('Retry-After as an HTTP date, and 429 like 503', async (t) => {
  mockClock(t);
  const at = new Date(Date.now() + 5000).toUTCString();
  const { fetch, requests, sentAt } = fakeFetch([() => problem(429, { 'retry-after': at }), ok]);
  const listed = new CmsClient({ baseUrl: 'https://cms.example', fetch }).pages.list();
  await advanceUntil(t, () => requests.length === 2);
  const waited = sentAt[1]! - sentAt[0]!;
  // The date names a whole second: at most a second sooner than five seconds, never later than asked.
  assert.ok(waited >= 4000 && waited < 10_000, `sent again after ${waited} ms`);
  assert.ok(sentAt[1]! >= Date.parse(at), 'not before the date Retry-After names');
  await listed;
  assert.equal(requests.length, 2);
  assert.equal(retryAfterMs('120'), 120_000);
  assert.equal(retryAfterMs('soon'), undefined);
});

test('a POST, PATCH or blog write is never retried: the 429 is thrown as a ProblemError at once', async () => {
  const { fetch, requests } = fakeFetch([() => problem(429, { 'retry-after': '1' })]);
  const error = await new CmsClient({ baseUrl: 'https://cms.example', fetch }).pages
    .create({ page_usertitle: 'x' })
    .catch((e: unknown) => e);
  assert.ok(error instanceof ProblemError);
  assert.deepEqual(
    { status: error.status, type: error.type, requestId: error.requestId, retryAfter: error.headers.get('retry-after') },
    { status: 429, type: '/problems/too-many-requests', requestId: 'req-1', retryAfter: '1' },
  );
  assert.equal(requests.length, 1);
});

test('retries stop after `retries`, and a Retry-After beyond maxDelayMs is not waited for', async (t) => {
  mockClock(t);
  const { fetch, requests } = fakeFetch([() => problem(503, { 'retry-after': '1' }), () => problem(503, { 'retry-after': '1' })]);
  const cms = new CmsClient({ baseUrl: 'https://cms.example', fetch, retry: { retries: 1 } });
  const listed = tracked(cms.pages.list().catch((e: unknown) => e));
  await advanceUntil(t, listed.done);
  const error = await listed.promise;
  assert.ok(error instanceof ProblemError && error.status === 503);
  assert.equal(requests.length, 2);

  const long = fakeFetch([() => problem(503, { 'retry-after': '3600' })]);
  const refused = await new CmsClient({ baseUrl: 'https://cms.example', fetch: long.fetch }).pages.list().catch((e: unknown) => e);
  assert.ok(refused instanceof ProblemError && refused.status === 503);
  assert.equal(long.requests.length, 1);
});

test('an abort during a retry wait ends the call with the abort reason', async (t) => {
  mockClock(t);
  const { fetch, requests } = fakeFetch([() => problem(503, { 'retry-after': '10' }), ok]);
  const stop = new AbortController();
  const listed = new CmsClient({ baseUrl: 'https://cms.example', fetch }).pages.list({}, { signal: stop.signal }).catch((e: unknown) => e);
  await settle();
  stop.abort(new Error('user left'));
  assert.equal(((await listed) as Error).message, 'user left');
  assert.equal(requests.length, 1);
});

test('each request carries the signal: a timeout or an abort reaches fetch', async (t) => {
  mockClock(t);
  const signals: AbortSignal[] = [];
  const hanging = (async (_input: unknown, init?: RequestInit) => {
    signals.push(init!.signal!);
    // Answers only when aborted, as a fetch to a server that never answers does.
    return new Promise<Response>((_resolve, reject) => {
      if (init!.signal!.aborted) reject(init!.signal!.reason);
      init!.signal!.addEventListener('abort', () => reject(init!.signal!.reason));
    });
  }) as typeof fetch;
  const cms = new CmsClient({ baseUrl: 'https://cms.example', fetch: hanging, timeoutMs: 10_000 });
  const timedOut = tracked(cms.pages.get(1).catch((e: unknown) => e));
  const waited = await advanceUntil(t, timedOut.done);
  assert.equal(((await timedOut.promise) as Error).name, 'TimeoutError');
  assert.ok(waited >= 10_000, `not before timeoutMs: after ${waited} ms`);
  const stop = new AbortController();
  const aborted = cms.pages.get(1, { signal: stop.signal, timeoutMs: 60_000 }).catch((e: unknown) => e);
  await settle();
  stop.abort();
  assert.equal(((await aborted) as Error).name, 'AbortError');
  assert.equal(signals.length, 2);
});

test('credentials and If-Match go in headers, never in the URL', async () => {
  const { fetch, requests } = fakeFetch([
    () => new Response(JSON.stringify({ data: [{ page: 1 }] }), { status: 200, headers: { etag: '"b"' } }),
  ]);
  const cms = new CmsClient({ baseUrl: 'https://cms.example/', fetch, auth: { apiId: 'id1', apiKey: 'key1' } });
  const updated = await cms.pages.update(1, { page_usertitle: 'x' }, { ifMatch: '"a"' });
  assert.equal(updated.etag, '"b"');
  const [request] = requests;
  assert.equal(request!.url, 'https://cms.example/api/page/1');
  assert.equal(request!.method, 'PATCH');
  assert.deepEqual(
    [request!.headers.get('x-api-id'), request!.headers.get('x-api-key'), request!.headers.get('if-match')],
    ['id1', 'key1', '"a"'],
  );
  assert.equal(await request!.text(), '{"page_usertitle":"x"}');
});

test('verifyWebhook accepts what standardwebhooks signs, either secret during a rotation, and refuses the rest', async () => {
  const secret = `whsec_${Buffer.from('a'.repeat(32)).toString('base64')}`;
  const other = `whsec_${Buffer.from('b'.repeat(32)).toString('base64')}`;
  const body = JSON.stringify({ type: 'webhook.test', timestamp: '2026-12-01T12:00:00.000Z', data: { webhookId: 3 } });
  const now = new Date('2026-12-01T12:00:00Z');
  const sign = (key: string) => new Webhook(key).sign('msg_1', now, body);
  const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(now.getTime() / 1000), 'webhook-signature': sign(secret) };
  const event = await verifyWebhook(secret, body, headers, { now: now.getTime() });
  assert.deepEqual(event, JSON.parse(body));
  // Two signatures during a rotation: either secret verifies.
  const both = { ...headers, 'webhook-signature': `${sign(other)} ${sign(secret)}` };
  await verifyWebhook(secret, body, both, { now: now.getTime() });
  await verifyWebhook(other, body, both, { now: now.getTime() });
  for (const [why, attempt] of [
    ['another secret', () => verifyWebhook(other, body, headers, { now: now.getTime() })],
    ['a changed body', () => verifyWebhook(secret, body.replace('3', '4'), headers, { now: now.getTime() })],
    ['an old timestamp', () => verifyWebhook(secret, body, headers, { now: now.getTime() + 301_000 })],
    ['no signature', () => verifyWebhook(secret, body, { ...headers, 'webhook-signature': '' }, { now: now.getTime() })],
  ] as const) {
    await assert.rejects(attempt, WebhookVerificationError, why);
  }
});
