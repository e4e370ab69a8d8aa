// The SDK against a real server process (SQLite, or PostgreSQL with TEST_DATABASE_URL): one
// server for the file, each behaviour a subtest.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import {
  apiKey,
  bearer,
  type Change,
  CmsClient,
  isProblem,
  OAuthClient,
  ProblemError,
  type TokenSet,
  verifyWebhook,
  WebhookVerificationError,
} from '../../client/src/index.js';
import { fileImage } from '../../client/src/node.js';
import { image } from '../blog-fixtures.js';
import { Browser, completeInteraction, REDIRECT_URI, startOAuthProcess } from '../oauth.helpers.js';
import { feedEnd } from '../server-process.js';
import { webhookReceiver } from '../webhook-receiver.js';

test('the SDK against a server process', async (t) => {
  const server = await startOAuthProcess(t, { twoSites: false, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_POLL_MS: '10' } });
  const cms = new CmsClient({ baseUrl: server.base, auth: apiKey(server.site.apiId, server.site.apiKey) });

  await t.test('pages: create, read, update with If-Match, delete; a stale ETag is a 412 ProblemError', async () => {
    const created = await cms.pages.create({ page_usertitle: 'SDK page' });
    assert.equal(created.data.page_usertitle, 'SDK page');
    assert.equal(created.location, `/api/page/${created.data.page}`);
    const read = await cms.pages.get(created.data.page);
    assert.equal(read.etag, created.etag);
    const updated = await cms.pages.update(created.data.page, { page_menuname: 'Menu' }, { ifMatch: read.etag });
    assert.equal(updated.data.page_menuname, 'Menu');
    assert.notEqual(updated.etag, read.etag);
    const stale = await cms.pages.update(created.data.page, { page_menuname: 'Lost' }, { ifMatch: read.etag }).catch((e: unknown) => e);
    assert.ok(isProblem(stale, 'precondition-failed'), String(stale));
    assert.equal(stale.status, 412);
    await cms.pages.delete(created.data.page, { ifMatch: updated.etag });
    const gone = await cms.pages.get(created.data.page).catch((e: unknown) => e);
    assert.ok(gone instanceof ProblemError);
    assert.deepEqual(
      { type: gone.type, title: gone.title, status: gone.status, instance: gone.instance },
      { type: '/problems/not-found', title: 'Not found', status: 404, instance: `/api/page/${created.data.page}` },
    );
    assert.match(gone.detail, /page/);
    assert.ok(gone.requestId, 'the X-Request-Id to quote');
  });

  await t.test('a validation problem names its fields', async () => {
    const error = await cms.pages.create({ page_parent: -1 } as never).catch((e: unknown) => e);
    assert.ok(isProblem(error, 'validation-failed'), String(error));
    assert.ok(error.errors.some((e) => e.field === 'page_parent'));
  });

  await t.test('modify re-reads and tries again when another writer got in between (412)', async () => {
    const { data } = await cms.pages.create({ page_usertitle: 'Counter', page_keywords: '0' });
    let calls = 0;
    const result = await cms.pages.modify(data.page, async (current) => {
      calls++;
      // On the first call another client changes the page after our read: our write must lose.
      if (calls === 1) await cms.pages.update(data.page, { page_keywords: '10' });
      return { page_keywords: String(Number(current.page_keywords) + 1) };
    });
    assert.equal(calls, 2);
    assert.equal(result.data.page_keywords, '11');
  });

  await t.test('all() walks every cursor page as an async iterator', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push((await cms.pages.create({ page_usertitle: `Walk ${i}`, page_keywords: 'walk' })).data.page);
    const seen: number[] = [];
    for await (const page of cms.pages.all({ tags: 'walk', pageSize: 2 })) seen.push(page.page);
    assert.deepEqual(seen.sort(), ids.sort());
  });

  await t.test('a blog with images from a Blob, a Buffer and a file path, in one multipart request', async () => {
    const page = await cms.pages.create({ page_usertitle: 'Blog holder' });
    const dir = await mkdtemp(path.join(tmpdir(), 'sdk-images-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'third.png');
    await writeFile(file, await image('png', 30, 20, 3));
    const blog = await cms.blogs.create(
      { page: page.data.page, info_title: 'With images' },
      {
        images: {
          primary: new Blob([await image('jpeg', 40, 30, 1)], { type: 'image/jpeg' }),
          additional: [await image('png', 50, 30, 2), await fileImage(file)],
        },
      },
    );
    assert.match(blog.data.info_img, /^\/images\/[0-9a-f]{32}\.jpg$/);
    assert.equal(blog.data.info_img_json?.width, 40);
    assert.equal(blog.data.info_more_images.length, 2, String(blog.data.info_more_images));
    assert.equal(blog.location, `/api/blog/${blog.data.info_id}`);
    const read = await cms.blogs.get(blog.data.info_id);
    assert.equal(read.data.info_title, 'With images');
  });

  await t.test('the change feed: an async iterator that long-polls and resumes from its stored cursor', async () => {
    const since = await feedEnd(server.base, `Basic ${btoa(`${server.site.apiId}:${server.site.apiKey}`)}`);
    const stop = new AbortController();
    const cursors: string[] = [];
    const feed = cms.changes.follow({ since, wait: 30, onCursor: (cursor) => void cursors.push(cursor), signal: stop.signal });
    // The first request waits for a change: make one while it waits.
    const next = feed.next();
    const created = await cms.pages.create({ page_usertitle: 'Fed' });
    const first = (await next).value as Change;
    assert.deepEqual({ type: first.type, id: first.id, op: first.op }, { type: 'page', id: created.data.page, op: 'create' });
    await cms.pages.update(created.data.page, { page_menuname: 'Fed too' });
    const second = (await feed.next()).value as Change;
    assert.deepEqual({ id: second.id, op: second.op }, { id: created.data.page, op: 'update' });
    assert.equal(cursors.length, 1, 'the cursor after the first answer was stored');
    stop.abort();
    assert.equal((await feed.next()).done, true, 'aborting ends the feed without an error');
    // A new run resumes from the stored cursor: the update comes again (at least once), the create does not.
    const resumed = cms.changes.follow({ since: cursors[0], wait: 0 });
    const again = (await resumed.next()).value as Change;
    assert.deepEqual({ id: again.id, op: again.op, seq: again.seq }, { id: created.data.page, op: 'update', seq: second.seq });
    await resumed.return();
  });

  await t.test('webhooks: a delivery verifies with the secret the hook was created with, and is typed', async (t) => {
    const receiver = await webhookReceiver(t);
    const hook = await cms.webhooks.create({ url: receiver.url, events: ['page.created'] });
    assert.match(hook.secret, /^whsec_/);
    const created = await cms.pages.create({ page_usertitle: 'Hooked' });
    const [delivery] = await receiver.waitFor(1);
    const headers = {
      'webhook-id': delivery!.id,
      'webhook-timestamp': String(delivery!.timestamp),
      'webhook-signature': delivery!.signature,
    };
    const event = await verifyWebhook(hook.secret, delivery!.body, headers);
    assert.equal(event.type, 'page.created');
    assert.deepEqual(
      { type: event.data.type, id: event.data.id, op: event.data.op },
      { type: 'page', id: created.data.page, op: 'create' },
    );
    await assert.rejects(verifyWebhook(hook.secret, `${delivery!.body} `, headers), WebhookVerificationError);
    await assert.rejects(
      verifyWebhook(hook.secret, delivery!.body, new Headers(headers), { now: Date.now() + 3_600_000 }),
      WebhookVerificationError,
    );
    await cms.webhooks.delete(hook.id);
  });

  await t.test('OAuth: authorization URL with PKCE, code exchange, refresh with rotation and storage, revoke', async () => {
    const oauth = new OAuthClient({
      baseUrl: server.base,
      clientId: server.clientId,
      redirectUri: REDIRECT_URI,
      allowInsecureRequests: true,
    });
    const request = await oauth.authorizationUrl({ scope: 'everything:write' });
    const url = new URL(request.url);
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(url.searchParams.get('resource'), server.base);
    // The owner signs in and approves, as in a browser; the browser comes back to the redirect URI.
    const step = await completeInteraction(new Browser(server.base), request.url, { login: server.owner, site: server.site.siteId });
    assert.ok(step.callback, step.html.slice(0, 300));
    const tokens = await oauth.exchangeCode(step.callback, request);
    assert.ok(tokens.access_token && tokens.refresh_token && tokens.expires_at);

    const stored: TokenSet[] = [];
    const session = oauth.session(tokens, { onTokens: (next) => void stored.push(next) });
    const client = new CmsClient({ baseUrl: server.base, auth: session });
    const page = await client.pages.create({ page_usertitle: 'By OAuth' });
    assert.equal(page.data.page_usertitle, 'By OAuth');

    // Two requests at once with an expired token share one refresh (a second would be a replay).
    const old = session.tokens;
    (session.tokens as TokenSet).expires_at = Date.now();
    await Promise.all([client.pages.get(page.data.page), client.pages.get(page.data.page)]);
    assert.equal(stored.length, 1, 'one refresh, stored');
    assert.notEqual(stored[0]!.refresh_token, old.refresh_token, 'refresh tokens rotate');
    const reused = await oauth.refresh(old.refresh_token!).catch((e: unknown) => e);
    assert.ok(reused instanceof ProblemError && reused.title === 'invalid_grant', String(reused));

    // The replay above revoked the connection (the service's rule): a new one, whose access token
    // the server refuses (as it would an expired one): the session refreshes once, for both requests.
    const again = await oauth.authorizationUrl({ scope: 'everything:read' });
    const home = await completeInteraction(new Browser(server.base), again.url, { login: server.owner, site: server.site.siteId });
    const renewed: TokenSet[] = [];
    const refused = oauth.session(
      { ...(await oauth.exchangeCode(home.callback!, again)), access_token: 'refused' },
      {
        onTokens: (next) => void renewed.push(next),
      },
    );
    const both = new CmsClient({ baseUrl: server.base, auth: refused });
    await Promise.all([both.pages.list({ pageSize: 1 }), both.pages.list({ pageSize: 2 })]);
    assert.equal(renewed.length, 1, 'one refresh after the 401s');

    // And a connection to revoke ourselves.
    const second = await oauth.authorizationUrl({ scope: 'everything:read' });
    const back = await completeInteraction(new Browser(server.base), second.url, { login: server.owner, site: server.site.siteId });
    const fresh = oauth.session(await oauth.exchangeCode(back.callback!, second));
    const reader = new CmsClient({ baseUrl: server.base, auth: fresh });
    await reader.pages.list({ pageSize: 1 });
    await fresh.revoke();
    const after = await new CmsClient({ baseUrl: server.base, auth: bearer(fresh.tokens.access_token) }).pages
      .list()
      .catch((e: unknown) => e);
    assert.ok(isProblem(after, 'unauthorized'), String(after));
  });
});
