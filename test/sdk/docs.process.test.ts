// Every example of docs/sdk.md and of the README's integrator quick start runs, as written but
// for its placeholders (the server's address, credentials, file names), against a server process.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { apiKey, bearer, type Change, CmsClient, isProblem, type TokenSet } from '../../client/src/index.js';
import { image } from '../blog-fixtures.js';
import { Browser, completeInteraction, startOAuthProcess } from '../oauth.helpers.js';
import { feedEnd } from '../server-process.js';
import { webhookReceiver } from '../webhook-receiver.js';
import { examplesOf, fillIn, runExample } from './examples.js';

test('the examples of docs/sdk.md and README.md', async (t) => {
  const server = await startOAuthProcess(t, { twoSites: false, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_POLL_MS: '10' } });
  const dir = await mkdtemp(path.join(tmpdir(), 'sdk-examples-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const values = { base: server.base, apiId: server.site.apiId, apiKey: server.site.apiKey, clientId: server.clientId };
  const examples = new Map([...examplesOf('docs/sdk.md'), ...examplesOf('README.md')]);
  const cms = new CmsClient({ baseUrl: server.base, auth: apiKey(values.apiId, values.apiKey) });
  const basic = `Basic ${btoa(`${values.apiId}:${values.apiKey}`)}`;
  const ran = new Set<string>();
  const run = (name: string, more: Record<string, string> = {}) => {
    const code = examples.get(name);
    assert.ok(code !== undefined, `no example ${name}`);
    ran.add(name);
    return runExample(dir, name, fillIn(code, values, more));
  };
  const changesSince = async (since: string) => (await cms.changes.list({ since })).data;

  await t.test('quickstart: creates, changes and deletes a page', async () => {
    const since = await feedEnd(server.base, basic);
    const { logs } = await run('quickstart');
    const changes = await changesSince(since);
    assert.deepEqual(
      changes.map((c: Change) => c.op),
      ['create', 'update', 'delete'],
    );
    assert.ok(logs.length >= 1, 'every page was listed');
  });

  await t.test('credentials', async () => {
    const { logs } = await run('credentials');
    assert.match(logs[0]!, /^(\d+) \1$/);
  });

  await t.test('lists', async () => {
    const { logs } = await run('lists');
    assert.match(logs[0]!, /pages; the first 20 by title/);
  });

  await t.test('safe updates', async () => {
    const { logs } = await run('safe-updates');
    assert.deepEqual(logs, ['info,featured']);
  });

  await t.test('blogs with images from a file and a Buffer', async () => {
    await writeFile(path.join(dir, 'launch.jpg'), await image('jpeg', 40, 30));
    await writeFile(path.join(dir, 'team.png'), await image('png', 20, 20));
    const { logs } = await run('blog-images', {
      "'photos/launch.jpg'": JSON.stringify(path.join(dir, 'launch.jpg')),
      "'photos/team.png'": JSON.stringify(path.join(dir, 'team.png')),
    });
    assert.match(logs[0]!, /^\/images\/[0-9a-f]{32}\.jpg 40 \/images\/[0-9a-f]{32}\.png$/);
  });

  await t.test('errors', async () => {
    const { logs } = await run('errors');
    assert.match(logs[0]!, /^404 Not found .*\(request .+\)$/);
    assert.match(logs[1]!, /^page_parent /);
  });

  await t.test('retries and timeouts', async () => {
    const { logs } = await run('retries');
    assert.match(logs[0]!, /^\d+$/);
  });

  await t.test('the change feed keeps a store in step and stops on abort', async () => {
    const { exports } = await run('feed');
    const sync = exports.sync as (store: unknown, signal: AbortSignal) => Promise<void>;
    const store = { cursor: await feedEnd(server.base, basic), records: new Map<string, { page_usertitle: string }>() };
    const stop = new AbortController();
    // The record arrives in the store through the feed: resolve when it is set.
    const arrived = new Promise<string>((resolve) => {
      const set = store.records.set.bind(store.records);
      store.records.set = (key, value) => {
        resolve(key);
        return set(key, value);
      };
    });
    const syncing = sync(store, stop.signal);
    const { data } = await cms.pages.create({ page_usertitle: 'Synced' });
    assert.equal(await arrived, `page/${data.page}`);
    assert.equal(store.records.get(`page/${data.page}`)?.page_usertitle, 'Synced');
    stop.abort();
    await syncing;
    assert.ok(store.cursor, 'the cursor to resume from was stored');
  });

  await t.test('webhooks: register, then verify a delivery in a fetch-style handler', async (t) => {
    const receiver = await webhookReceiver(t);
    const { exports } = await run('webhook-create', { "'https://app.example/hooks/cms'": JSON.stringify(receiver.url) });
    const hook = exports.hook as { id: number; secret: string };
    await cms.pages.create({ page_usertitle: 'Hooked' });
    const [delivery] = await receiver.waitFor(1);
    const { exports: receiving } = await run('webhook-receive', { "'whsec_SECRET'": JSON.stringify(hook.secret) });
    const handle = receiving.handle as (request: Request) => Promise<Response>;
    const headers = {
      'webhook-id': delivery!.id,
      'webhook-timestamp': String(delivery!.timestamp),
      'webhook-signature': delivery!.signature,
    };
    const post = (body: string) => new Request('https://app.example/hooks/cms', { method: 'POST', headers, body });
    const logs: string[] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => void logs.push(args.join(' '));
    try {
      assert.equal((await handle(post(delivery!.body))).status, 204);
      assert.equal((await handle(post(`${delivery!.body} `))).status, 400);
    } finally {
      console.log = log;
    }
    assert.match(logs[0]!, /^page\.created page \d+ seq \d+$/);
    await cms.webhooks.delete(hook.id);
  });

  await t.test('OAuth: sign-in, callback with stored tokens, sign-out', async () => {
    const { exports } = await run('oauth');
    const { login, callback, logout } = exports as {
      login(session: object): Promise<string>;
      callback(session: object, url: URL, save: (tokens: TokenSet) => void): Promise<CmsClient>;
      logout(tokens: TokenSet): Promise<void>;
    };
    const session = {};
    const url = await login(session);
    const step = await completeInteraction(new Browser(server.base), url, { login: server.owner, site: server.site.siteId });
    assert.ok(step.callback, step.html.slice(0, 300));
    const saved: TokenSet[] = [];
    const client = await callback(session, step.callback, (tokens) => void saved.push(tokens));
    const page = await client.pages.create({ page_usertitle: 'By the OAuth example' });
    assert.equal(page.data.page_usertitle, 'By the OAuth example');
    await logout(saved.at(-1)!);
    const after = await new CmsClient({ baseUrl: server.base, auth: bearer(saved.at(-1)!.access_token) }).pages.list().catch((e) => e);
    assert.ok(isProblem(after, 'unauthorized'), String(after));
  });

  await t.test('no example went untested', () => {
    assert.deepEqual(
      [...examples.keys()].filter((name) => !ran.has(name)),
      [],
    );
  });
});
