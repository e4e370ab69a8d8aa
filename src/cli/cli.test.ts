import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../app.js';
import { testConfig } from '../config.js';
import { createDatabase } from '../db/database.js';
import { main } from './main.js';

const CLI = fileURLToPath(new URL('./main.js', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in this process, with only the environment the test gives it and its output caught. */
async function cms(env: Record<string, string>, ...args: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    env: { ...inherited(), LOG_LEVEL: 'silent', ...env },
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code: code ?? null, stdout, stderr };
}

/** The environment without what would point a run at another database or demo. */
function inherited(): Record<string, string | undefined> {
  const { DATABASE_URL: _url, DEMO_PASSWORD: _password, ...rest } = process.env;
  return rest;
}

/** Runs the compiled CLI as a user would: its own process, its exit code and its streams. */
function cmsProcess(env: Record<string, string>, ...args: string[]): Promise<Run> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...inherited(), LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The one JSON object a --json run printed on stdout, after checking it succeeded. */
// biome-ignore lint/suspicious/noExplicitAny: assertions read arbitrary JSON
function ok(run: Run): any {
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, '');
  const lines = run.stdout.trim().split('\n');
  assert.equal(lines.length, 1, 'one JSON object on stdout');
  return JSON.parse(lines[0]!);
}

async function tempDataDir(t: TestContext): Promise<Record<string, string>> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cms-cli-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return { DATA_DIR: dir };
}

test('cms manages websites, users and API keys; a created key works until it is revoked', async (t) => {
  const env = await tempDataDir(t);
  const { applied } = ok(await cms(env, 'migrate', '--json'));
  assert.equal(applied[0], '0001_core', 'a fresh database gets every migration, in order');
  assert.deepEqual(ok(await cms(env, 'migrate', '--json')), { applied: [] });

  const site = ok(await cms(env, 'site', 'create', '--name', '  Bakery ', '--json'));
  assert.deepEqual(site, { id: 1, name: 'Bakery' });
  const plain = await cms(env, 'site', 'create', '--name', 'Florist');
  assert.equal(plain.stdout, '2\n', 'without --json only the id, for scripts');
  const { sites } = ok(await cms(env, 'site', 'list', '--json'));
  assert.deepEqual(
    sites.map((s: { id: number; name: string }) => [s.id, s.name]),
    [
      [1, 'Bakery'],
      [2, 'Florist'],
    ],
  );
  assert.match(sites[0].createdAt, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);

  const user = ok(
    await cms(env, 'user', 'create', '--email', 'Owner@Bakery.example', '--password', 'long enough', '--site', '1', '--json'),
  );
  assert.deepEqual(user, { id: 1, email: 'owner@bakery.example', siteId: 1, role: 'owner' });

  const key = ok(await cms(env, 'apikey', 'create', '--site', '1', '--label', 'shop sync', '--json'));
  assert.match(key.apiId, /^ak_/);
  assert.match(key.apiKey, /^sk_/);
  assert.equal(key.label, 'shop sync');
  const listed = ok(await cms(env, 'apikey', 'list', '--site', '1', '--json'));
  assert.deepEqual(Object.keys(listed.credentials[0]).sort(), [
    'apiId',
    'createdAt',
    'defaultPage',
    'label',
    'lastUsedAt',
    'revokedAt',
    'scopes',
  ]);
  assert.equal(listed.credentials[0].defaultPage, null);
  assert.equal(listed.credentials[0].scopes, null, 'made without --scope: every permission');
  assert.equal(listed.credentials[0].revokedAt, null);
  assert.ok(!JSON.stringify(listed).includes(key.apiKey), 'a list never shows the key');
  assert.deepEqual(ok(await cms(env, 'apikey', 'list', '--site', '2', '--json')), { credentials: [] });
  const noPage = await cms(env, 'apikey', 'create', '--site', '1', '--label', 'feed', '--default-page', '7');
  assert.equal(noPage.code, 1);
  assert.match(noPage.stderr, /Website 1 has no page 7/);
  assert.equal((await cms(env, 'apikey', 'create', '--site', '1', '--label', 'feed', '--default-page', 'seven')).code, 2);

  // The same database the CLI wrote, seen by the app the server runs.
  const db = createDatabase(`sqlite:${path.join(env.DATA_DIR!, 'cms.sqlite')}`);
  t.after(() => db.close());
  const app = await buildApp({ config: testConfig(), db });
  t.after(() => app.close());
  const headers = { authorization: `Basic ${Buffer.from(`${key.apiId}:${key.apiKey}`).toString('base64')}` };
  assert.equal((await app.inject({ url: '/api/page', headers })).statusCode, 200);
  const news = await app.inject({ method: 'POST', url: '/api/page', headers, payload: { page_usertitle: 'News' } });
  const newsId = JSON.parse(news.body).data[0].page as number;
  const feed = ok(await cms(env, 'apikey', 'create', '--site', '1', '--label', 'feed', '--default-page', String(newsId), '--json'));
  assert.equal(feed.defaultPage, newsId);
  const withDefault = ok(await cms(env, 'apikey', 'list', '--site', '1', '--json'));
  assert.equal(withDefault.credentials.find((c: { apiId: string }) => c.apiId === feed.apiId).defaultPage, newsId);
  const text = await cms(env, 'apikey', 'list', '--site', '1');
  assert.match(text.stdout, /DEFAULT PAGE/);

  assert.deepEqual(ok(await cms(env, 'apikey', 'revoke', key.apiId, '--json')), { apiId: key.apiId, revoked: true });
  assert.equal((await app.inject({ url: '/api/page', headers })).statusCode, 401);
  const after = ok(await cms(env, 'apikey', 'list', '--site', '1', '--json'));
  // Found by its id: keys made in the same second are listed in the order of their random ids.
  assert.match(after.credentials.find((c: { apiId: string }) => c.apiId === key.apiId).revokedAt, /^\d{4}-/);
  assert.equal(ok(await cms(env, 'apikey', 'revoke', key.apiId, '--json')).revoked, true, 'revoking twice is harmless');
});

test('cms apikey create --scope limits the key: it may do what its scopes allow, and is refused the rest with 403', async (t) => {
  const env = await tempDataDir(t);
  ok(await cms(env, 'migrate', '--json'));
  ok(await cms(env, 'site', 'create', '--name', 'Bakery', '--json'));
  const key = ok(
    await cms(env, 'apikey', 'create', '--site', '1', '--label', 'drafts', '--scope', 'pages:read', '--scope', 'blogs:write', '--json'),
  );
  assert.deepEqual(key.scopes, ['pages:read', 'blogs:write']);
  const listed = ok(await cms(env, 'apikey', 'list', '--site', '1', '--json'));
  assert.deepEqual(listed.credentials[0].scopes, ['pages:read', 'blogs:write']);
  assert.match((await cms(env, 'apikey', 'list', '--site', '1')).stdout, /SCOPES[\s\S]*pages:read blogs:write/);
  const full = ok(await cms(env, 'apikey', 'create', '--site', '1', '--label', 'sync', '--json'));
  assert.equal(full.scopes, null);

  const unknown = await cms(env, 'apikey', 'create', '--site', '1', '--label', 'x', '--scope', 'pages:delete');
  assert.equal(unknown.code, 1);
  assert.match(
    unknown.stderr,
    /Unknown scope pages:delete: an API credential may be limited to everything:read, everything:write, pages:read/,
  );
  assert.equal(
    (await cms(env, 'apikey', 'create', '--site', '1', '--label', 'x', '--scope', 'product:read')).code,
    1,
    'grants nothing here',
  );

  const db = createDatabase(`sqlite:${path.join(env.DATA_DIR!, 'cms.sqlite')}`);
  t.after(() => db.close());
  const app = await buildApp({ config: testConfig(), db });
  t.after(() => app.close());
  const basic = (k: { apiId: string; apiKey: string }) => ({
    authorization: `Basic ${Buffer.from(`${k.apiId}:${k.apiKey}`).toString('base64')}`,
  });
  const page = await app.inject({ method: 'POST', url: '/api/page', headers: basic(full), payload: { page_usertitle: 'News' } });
  assert.equal(page.statusCode, 201, 'a key made without scopes may do everything');
  const pageId = JSON.parse(page.body).data[0].page as number;

  const headers = basic(key);
  assert.equal((await app.inject({ url: '/api/page', headers })).statusCode, 200);
  const blog = await app.inject({ method: 'POST', url: '/api/blog', headers, payload: { page: pageId, info_title: 'Hello' } });
  assert.equal(blog.statusCode, 201, blog.body);
  assert.equal((await app.inject({ url: '/api/blog', headers })).statusCode, 200, 'blogs:write carries blogs:read');
  const denied = await app.inject({ method: 'POST', url: '/api/page', headers, payload: { page_usertitle: 'Nope' } });
  assert.equal(denied.statusCode, 403);
  assert.match(String(denied.headers['www-authenticate']), /error="insufficient_scope", scope="pages:write"/);
  assert.equal(
    JSON.parse(denied.body).detail,
    'This operation needs the scope pages:write, which this API credential was not given: create a credential with it (console, or cms apikey create --scope).',
  );
  assert.equal((await app.inject({ url: '/api/changes', headers })).statusCode, 403);
  assert.equal((await app.inject({ url: '/api/webhooks', headers })).statusCode, 403);
  // The change log names the key as it names any other.
  const changes = await app.inject({ url: '/api/changes', headers: basic(full) });
  assert.deepEqual(
    JSON.parse(changes.body).data.map((c: { type: string; actor: { kind: string; id: string } }) => [c.type, c.actor.kind, c.actor.id]),
    [
      ['page', 'api-key', full.apiId],
      ['blog', 'api-key', key.apiId],
    ],
  );
});

test('cms user: one account holds several websites; add-site, remove-site and list', async (t) => {
  const env = await tempDataDir(t);
  for (const name of ['Bakery', 'Florist', 'Garage']) ok(await cms(env, 'site', 'create', '--name', name, '--json'));
  ok(await cms(env, 'user', 'create', '--email', 'ann@example.com', '--password', 'long enough', '--site', '1', '--json'));
  ok(await cms(env, 'user', 'create', '--email', 'bob@example.com', '--password', 'long enough', '--site', '3', '--json'));
  assert.deepEqual(ok(await cms(env, 'user', 'add-site', '--email', 'Ann@Example.com', '--site', '2', '--json')), {
    userId: 1,
    email: 'ann@example.com',
    siteId: 2,
    siteName: 'Florist',
    role: 'owner',
  });
  ok(await cms(env, 'user', 'add-site', '--email', 'bob@example.com', '--site', '2', '--role', 'admin', '--json'));

  const { users } = ok(await cms(env, 'user', 'list', '--json'));
  assert.deepEqual(
    users.map((u: { email: string; sites: unknown[] }) => [u.email, u.sites]),
    [
      [
        'ann@example.com',
        [
          { id: 1, name: 'Bakery', role: 'owner' },
          { id: 2, name: 'Florist', role: 'owner' },
        ],
      ],
      [
        'bob@example.com',
        [
          { id: 2, name: 'Florist', role: 'admin' },
          { id: 3, name: 'Garage', role: 'owner' },
        ],
      ],
    ],
  );
  assert.match(users[0].createdAt, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  const ofGarage = ok(await cms(env, 'user', 'list', '--site', '3', '--json'));
  assert.deepEqual(
    ofGarage.users.map((u: { email: string }) => u.email),
    ['bob@example.com'],
    'only the users of that website, with all their websites',
  );
  assert.equal(ofGarage.users[0].sites.length, 2);

  const removed = ok(await cms(env, 'user', 'remove-site', '--email', 'ann@example.com', '--site', '1', '--json'));
  assert.deepEqual(removed, { userId: 1, email: 'ann@example.com', siteId: 1, revokedConnections: 0 });
  const after = ok(await cms(env, 'user', 'list', '--site', '1', '--json'));
  assert.deepEqual(after, { users: [] });
  const text = await cms(env, 'user', 'list');
  assert.match(text.stdout, /^ID\s+E-MAIL\s+CREATED \(UTC\)\s+WEBSITES\n1\s+ann@example.com\s+.*2 Florist \(owner\)\n/);
});

test('mistakes exit 2 (usage) or 1 (failure) with one JSON error on stderr and nothing on stdout', async (t) => {
  const env = await tempDataDir(t);
  ok(await cms(env, 'site', 'create', '--name', 'Only', '--json'));
  ok(await cms(env, 'user', 'create', '--email', 'taken@example.com', '--password', 'long enough', '--site', '1', '--json'));
  const cases: Array<[string[], number, RegExp]> = [
    [['frobnicate'], 2, /unknown command "frobnicate"/],
    [['site'], 2, /cms site create\|list/],
    [['site', 'create'], 2, /--name is required/],
    [['site', 'create', '--name'], 2, /'--name' argument/],
    [['site', 'list', '--colour', 'red'], 2, /Unknown option '--colour'/],
    [['apikey', 'list', '--site', 'one'], 2, /--site must be a website id/],
    [['apikey', 'list'], 2, /--site is required/],
    [['apikey', 'revoke'], 2, /usage: cms apikey revoke API_ID/],
    [['apikey', 'revoke', 'a', 'b'], 2, /unexpected "b"/],
    [['client', 'create', '--redirect-uri', 'https://x.example/cb'], 2, /--name is required/],
    [['connection', 'list', '--site', 'x'], 2, /--site must be a website id/],
    [['connection', 'revoke'], 2, /usage: cms connection revoke ID/],
    [['user', 'create', '--email', 'x@example.com', '--password', 'long enough', '--site', '1', '--role', 'god'], 2, /--role/],
    [['apikey', 'list', '--site', '42'], 1, /no website 42/],
    [['apikey', 'create', '--site', '42', '--label', 'x'], 1, /no website 42/],
    [['apikey', 'create', '--site', '1'], 2, /--label is required/],
    // The console's rules, by the same function: 1 to 100 characters after trimming.
    [['apikey', 'create', '--site', '1', '--label', ''], 1, /a label of 1 to 100 characters/],
    [['apikey', 'create', '--site', '1', '--label', '   '], 1, /a label of 1 to 100 characters/],
    [['apikey', 'create', '--site', '1', '--label', 'x'.repeat(300)], 1, /a label of 1 to 100 characters/],
    [['site', 'create', '--name', 'a'.repeat(5000)], 1, /A website name has at most 100 characters/],
    [['site', 'create', '--name', '  '], 1, /A website needs a name/],
    [['connection', 'list', '--site', '999'], 1, /no website 999/],
    [['apikey', 'revoke', 'ak_unknown'], 1, /no API credential ak_unknown/],
    [['user', 'create', '--email', 'not-an-address', '--password', 'long enough', '--site', '1'], 1, /not an e-mail address/],
    [['user', 'create', '--email', 'x@example.com', '--password', 'short', '--site', '1'], 1, /at least 8 characters/],
    [
      ['user', 'create', '--email', 'taken@example.com', '--password', 'long enough', '--site', '1'],
      1,
      /exists already.*cms user add-site --email taken@example.com --site 1/,
    ],
    [['user', 'add-site', '--email', 'nobody@example.com', '--site', '1'], 1, /no user nobody@example.com/],
    [['user', 'add-site', '--email', 'taken@example.com', '--site', '42'], 1, /no website 42/],
    [['user', 'add-site', '--email', 'taken@example.com'], 2, /--site is required/],
    [['user', 'add-site', '--email', 'taken@example.com', '--site', '1', '--role', 'king'], 2, /--role must be owner or admin/],
    [['user', 'remove-site', '--email', 'taken@example.com', '--site', '42'], 1, /does not have website 42/],
    [['user', 'remove-site', '--site', '1'], 2, /--email is required/],
    [['user', 'list', '--site', 'x'], 2, /--site must be a website id/],
    [['user', 'list', '--site', '42'], 1, /no website 42/],
  ];
  // Independent and read-only after the set-up: run side by side to keep the suite quick.
  const runs = await Promise.all(cases.map(([args]) => cms(env, ...args, '--json')));
  for (const [index, [args, code, message]] of cases.entries()) {
    const run = runs[index]!;
    assert.equal(run.code, code, `${args.join(' ')}: ${run.stderr}`);
    assert.equal(run.stdout, '', args.join(' '));
    const error = JSON.parse(run.stderr);
    assert.deepEqual(Object.keys(error), ['error']);
    assert.match(error.error, message, args.join(' '));
  }

  // As its own process too: the exit code is the process's, and the message is on its stderr.
  const human = await cmsProcess(env, 'site', 'create');
  assert.equal(human.code, 2);
  assert.equal(human.stderr, "cms: --name is required\nRun 'cms help' for usage.\n");

  const badConfig = await cms({ ...env, DATABASE_URL: 'mysql://db/cms' }, 'site', 'list', '--json');
  assert.equal(badConfig.code, 1);
  assert.match(JSON.parse(badConfig.stderr).error, /^configuration error: DATABASE_URL must be/);
});

test('cms help lists every command with its usage; no command means help', async () => {
  const { commands } = ok(await cms({}, 'help', '--json'));
  const names = commands.map((c: { name: string }) => c.name);
  for (const name of [
    'serve',
    'migrate',
    'site create',
    'site list',
    'user create',
    'user add-site',
    'user remove-site',
    'user list',
    'apikey create',
    'apikey list',
    'apikey revoke',
    'help',
  ]) {
    assert.ok(names.includes(name), name);
  }
  assert.equal(
    commands.find((c: { name: string }) => c.name === 'apikey create').usage,
    'cms apikey create --site ID --label LABEL [--default-page PAGE_ID] [--scope SCOPE …] [--json]',
  );
  const bare = await cmsProcess({});
  assert.equal(bare.code, 0);
  assert.match(bare.stdout, /Usage: cms <command>/);
  const one = await cms({}, 'apikey', 'revoke', '--help');
  assert.equal(one.stdout, 'Usage: cms apikey revoke API_ID [--json]\nRevoke an API credential; requests with it fail at once\n');
});

test('the OAuth commands run through cms like the others, with --json as one line', async (t) => {
  const env = await tempDataDir(t);
  ok(await cms(env, 'site', 'create', '--name', 'Shop', '--json'));
  // oidc-provider warns on stderr when it loads under Node 20; these commands load it.
  const quiet = (run: Run) => ({ ...run, stderr: run.stderr.replace(/^oidc-provider WARNING: Unsupported runtime\..*\n/gm, '') });
  const created = ok(quiet(await cms(env, 'client', 'create', '--name', 'App', '--redirect-uri', 'https://app.example/cb', '--json')));
  assert.deepEqual(created.redirectUris, ['https://app.example/cb']);
  const { clients } = ok(quiet(await cms(env, 'client', 'list', '--json')));
  const listed = clients.find((c: { clientId: string }) => c.clientId === created.clientId);
  assert.deepEqual(Object.keys(listed).sort(), ['applicationType', 'clientId', 'createdAt', 'name', 'redirectUris', 'source']);
  assert.deepEqual(ok(quiet(await cms(env, 'connection', 'list', '--site', '1', '--json'))), { connections: [] });
  const missing = quiet(await cms(env, 'connection', 'revoke', 'nope', '--json'));
  assert.equal(missing.code, 1);
  assert.deepEqual(JSON.parse(missing.stderr), { error: 'There is no OAuth connection nope.' });
  const help = await cms({}, 'client', 'create', '--help');
  assert.match(help.stdout, /^Usage: cms client create --name NAME --redirect-uri URI/);
  assert.deepEqual(ok(await cms({}, 'connection', 'list', '--help', '--json')), {
    usage: 'cms connection list --site ID [--json]',
    summary: "List a website's OAuth connections: state, REST API or MCP, app, user, scopes",
  });
  const { commands } = ok(await cms({}, 'help', '--json'));
  assert.deepEqual(
    commands.filter((c: { name: string }) => /^(client|connection) /.test(c.name)).map((c: { usage: string }) => c.usage),
    [
      'cms client create --name NAME --redirect-uri URI [--redirect-uri URI …] [--json]',
      'cms client list [--json]',
      'cms connection list --site ID [--json]',
      'cms connection revoke ID [--json]',
      'cms connection changes ID [--since "YYYY-MM-DD HH:MM:SS"] [--json]',
      'cms connection undo ID --since "YYYY-MM-DD HH:MM:SS" [--json]',
    ],
  );
});

test('cms records rebuild brings stored records up to date after a write that changed only the columns', async (t) => {
  const env = await tempDataDir(t);
  ok(await cms(env, 'site', 'create', '--name', 'Bakery', '--json'));
  const key = ok(await cms(env, 'apikey', 'create', '--site', '1', '--label', 'records', '--json'));
  const db = createDatabase(`sqlite:${path.join(env.DATA_DIR!, 'cms.sqlite')}`);
  t.after(() => db.close());
  const app = await buildApp({ config: testConfig(), db });
  t.after(() => app.close());
  const headers = { authorization: `Basic ${Buffer.from(`${key.apiId}:${key.apiKey}`).toString('base64')}` };
  for (const title of ['Opening hours', 'Prices']) {
    const created = await app.inject({ method: 'POST', url: '/api/page', headers, payload: { page_usertitle: title } });
    assert.equal(created.statusCode, 201);
  }
  assert.deepEqual(ok(await cms(env, 'records', 'rebuild', '--json')), { rewritten: 0 }, 'the services keep them current');

  // What a node of the previous release does during a rolling upgrade: it writes the columns only.
  await db.kysely.updateTable('pages').set({ page_usertitle: 'Opening times' }).where('page', '=', 1).execute();
  const stale = await app.inject({ url: '/api/page/1', headers });
  assert.equal(JSON.parse(stale.body).data[0].page_usertitle, 'Opening hours');

  assert.deepEqual(ok(await cms(env, 'records', 'rebuild', '--json')), { rewritten: 1 });
  const fresh = await app.inject({ url: '/api/page/1', headers });
  assert.equal(JSON.parse(fresh.body).data[0].page_usertitle, 'Opening times');
  assert.notEqual(fresh.headers.etag, stale.headers.etag);
  assert.equal((await cms(env, 'records', 'rebuild')).stdout, 'Every stored record was current.\n');
});
