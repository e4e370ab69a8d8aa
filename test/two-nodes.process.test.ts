import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { createCredential } from '../src/accounts/account.service.js';
import { readDemoCredentials } from '../src/demo/credentials.js';
import { DEMO_PAGES, type DemoPage } from '../src/demo/demo.content.js';
import { DEMO_CLIENT_ID, DEMO_REDIRECT_URIS } from '../src/oauth/clients/client.service.js';
import { listConnections } from '../src/oauth/connections/connection.service.js';
import { createEmptyPostgresDatabase, TEST_DATABASE_URL } from './helpers.js';
import { authorizeUrl, Browser, completeInteraction, formOf, pkcePair, type Tokens, tokenRequest } from './oauth.helpers.js';
import { startRedis } from './redis-server.js';
import { freePort, HANG_LIMIT_MS, listening, logLines, type Started, start } from './server-process.js';

/**
 * The load balancer in front of the nodes, listening at PUBLIC_URL; the test says which node gets
 * the next requests. It passes requests and answers through untouched, Host included, so each node
 * sees what it would behind a real proxy: the issuer's own host, on plain HTTP (TRUST_PROXY stays
 * off: no X-Forwarded-* is added or believed). Sending requests straight to each node's port
 * instead would show each a different host from its issuer, and the authorization server builds
 * its redirects from the request: the browser would follow them to the wrong place.
 */
async function loadBalancer(t: TestContext) {
  let target: Started | undefined;
  const served = new Map<Started, number>();
  const server = http.createServer((request, response) => {
    const node = target!;
    served.set(node, (served.get(node) ?? 0) + 1);
    const { port } = new URL(node.base);
    const upstream = http.request(
      { host: '127.0.0.1', port, method: request.method, path: request.url, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => response.writeHead(502).end());
    request.pipe(upstream);
  });
  server.listen(await freePort(), '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as { port: number };
  return {
    base: `http://127.0.0.1:${port}`,
    /** Sends every request from now on to `node`. */
    to(node: Started) {
      target = node;
    },
    served: (node: Started) => served.get(node) ?? 0,
  };
}

function treeSize(pages: readonly DemoPage[]): number {
  return pages.reduce((n, page) => n + 1 + treeSize(page.children ?? []), 0);
}

test('two nodes, one PostgreSQL, one Redis: one migration, one demo, and logins, tokens, revocations and limits shared', {
  skip: TEST_DATABASE_URL ? false : 'needs PostgreSQL (set TEST_DATABASE_URL): several nodes cannot share a SQLite file',
  timeout: HANG_LIMIT_MS,
}, async (t) => {
  const database = await createEmptyPostgresDatabase(t);
  const redisUrl = await startRedis(t);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-nodes-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const lb = await loadBalancer(t);
  const password = 'two nodes, one service';
  const env = {
    DATABASE_URL: database.url,
    PUBLIC_URL: lb.base,
    COOKIE_SECRETS: `${randomBytes(32).toString('base64url')},${randomBytes(32).toString('base64url')}`,
    // Shared, as DATA_DIR/images must be: the seeding node writes the credentials file here.
    DATA_DIR: dataDir,
    DEMO_PASSWORD: password,
    RATE_LIMIT_API: '6',
    REDIS_URL: redisUrl ?? '',
  };

  // Spawned in the same tick, on an empty database: both reach the migrations together.
  const [a, b] = await Promise.all([start(t, env), start(t, env)]);
  await Promise.all([listening(a), listening(b)]);
  const db = database.open();
  const credentials = await readDemoCredentials({ dataDir });
  assert.ok(credentials, 'one node wrote the demo credentials');
  const issuer = `${lb.base}/api/auth`;
  const basic = `Basic ${Buffer.from(`${credentials.apiId}:${credentials.apiKey}`).toString('base64')}`;
  const api = (target: string, headers: Record<string, string>, init: RequestInit = {}) =>
    fetch(`${lb.base}${target}`, { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  await t.test('the migrations ran exactly once, and the demo was created once', async () => {
    const lines = [a, b].map((node) =>
      logLines(node).filter((l) => /^database (migrations applied|schema is current)$/.test(String(l.msg))),
    );
    assert.deepEqual(
      lines.map((l) => l.length),
      [1, 1],
      'each node says once whether it migrated',
    );
    const applied = lines.map((l) => l[0]!.migrations as string[]);
    const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db.kysely);
    const names = rows.map((r) => r.name);
    assert.ok(names.length > 0);
    assert.deepEqual(applied.flat().sort(), names, 'each migration applied by one node, none by both');
    assert.deepEqual(
      applied.map((l) => l.length).sort(),
      [0, names.length],
      'one node migrated everything; the other waited for its lock and found nothing to do',
    );

    assert.equal([a, b].filter((node) => node.output().includes(`Demo website "${credentials.siteName}" created`)).length, 1);
    assert.equal([a, b].filter((node) => node.output().includes('Demo website exists already')).length, 1);
    const count = async (table: 'sites' | 'users' | 'site_users' | 'api_credentials' | 'oauth_clients' | 'pages') =>
      Number(
        (
          await db.kysely
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    for (const table of ['sites', 'users', 'site_users', 'api_credentials', 'oauth_clients'] as const) {
      assert.equal(await count(table), 1, `one row in ${table}`);
    }
    assert.equal(await count('pages'), treeSize(DEMO_PAGES), 'the demo page tree, once');
  });

  await t.test('a page written through A is read through B', async () => {
    lb.to(a);
    const created = await api(
      '/api/page',
      { authorization: basic, 'content-type': 'application/json' },
      {
        method: 'POST',
        body: JSON.stringify({ page_usertitle: 'Written on node A' }),
      },
    );
    assert.equal(created.status, 201);
    const [page] = ((await created.json()) as { data: Array<{ page: number }> }).data;
    lb.to(b);
    const onB = await api(`/api/page/${page!.page}`, { authorization: basic });
    assert.equal(onB.status, 200);
    assert.equal(((await onB.json()) as { data: Array<{ page_usertitle: string }> }).data[0]?.page_usertitle, 'Written on node A');
    assert.equal(onB.headers.get('etag'), created.headers.get('etag'), 'B gives the version A wrote the same ETag');
  });

  const redirectUri = DEMO_REDIRECT_URIS[0]!;
  const owner = { email: credentials.owner.email, password };
  const browser = new Browser(lb.base);
  /** Exchanges a code for tokens on the node the load balancer points at. */
  const exchange = async (code: string, verifier: string) => {
    const response = await tokenRequest(issuer, {
      grant_type: 'authorization_code',
      client_id: DEMO_CLIENT_ID,
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    return response.body as unknown as Tokens;
  };
  const refresh = (token: string) => tokenRequest(issuer, { grant_type: 'refresh_token', client_id: DEMO_CLIENT_ID, refresh_token: token });

  let first: Tokens | undefined;
  await t.test('a login begun on A finishes on B, and a token issued by A works on B', async () => {
    const { verifier, challenge } = await pkcePair();
    lb.to(a);
    const login = await browser.follow(authorizeUrl(issuer, { clientId: DEMO_CLIENT_ID, redirectUri, codeChallenge: challenge }));
    const form = formOf(login.html);
    assert.equal(form.step, 'login', 'A shows the login page');
    lb.to(b);
    // B checks the CSRF token and the interaction cookie A made, signs the owner in, and goes on.
    const signedIn = await browser.follow(form.action, { form: { csrf: form.csrf, decision: 'approve', ...owner } });
    assert.equal(signedIn.status, 200, signedIn.html.slice(0, 500));
    assert.notEqual(formOf(signedIn.html).step, 'login', 'B accepted the login');
    // Each prompt is an interaction of its own: go on from the page B shows now.
    const nextStep = formOf(signedIn.html).action.replace(/\/[^/]+$/, '');
    const done = await completeInteraction(browser, nextStep, { login: owner, site: credentials.siteId });
    const code = done.callback?.searchParams.get('code');
    assert.ok(code, `B finished the authorization: ${done.status} ${done.html.slice(0, 300)}`);

    lb.to(a);
    first = await exchange(code, verifier);
    lb.to(b);
    const pages = await api('/api/page', bearer(first.access_token));
    assert.equal(pages.status, 200);
    assert.equal(((await pages.json()) as { meta: { total: number } }).meta.total, treeSize(DEMO_PAGES) + 1, "the demo website's pages");
  });

  await t.test('a connection revoked on A is refused by B once notified', async () => {
    assert.ok(first);
    lb.to(b);
    assert.equal((await api('/api/page', bearer(first.access_token))).status, 200, 'B has just accepted the token');
    lb.to(a);
    const revoked = await fetch(`${issuer}/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: first.access_token, client_id: DEMO_CLIENT_ID }),
    });
    assert.equal(revoked.status, 200);
    lb.to(b);
    // B kept the token it had read; the change notification from PostgreSQL drops it
    // (docs/deploy.md, Kept credentials). B tells no one when it hears it, so B is asked until it
    // refuses; the attempts only turn a notification never heard into a failure. How soon is for bench/.
    for (let attempt = 1; (await api('/api/page', bearer(first.access_token))).status !== 401; attempt++) {
      assert.ok(attempt < 1000, 'B refuses the token once notified');
      await sleep(5); // the interval of the poll, not a wait for the event
    }
    assert.equal((await refresh(first.refresh_token)).body.error, 'invalid_grant', "and B refuses the connection's refresh token");
    assert.deepEqual(
      (await listConnections(db.kysely, credentials.siteId)).map((c) => c.status),
      ['revoked'],
    );
  });

  await t.test('a refresh token rotated on A and replayed on B revokes the connection', async () => {
    const { verifier, challenge } = await pkcePair();
    lb.to(a);
    const url = authorizeUrl(issuer, { clientId: DEMO_CLIENT_ID, redirectUri, codeChallenge: challenge, state: 'second' });
    const done = await completeInteraction(browser, url, { login: owner, site: credentials.siteId });
    const code = done.callback?.searchParams.get('code');
    assert.ok(code, `authorized again: ${done.status} ${done.html.slice(0, 300)}`);
    const tokens = await exchange(code, verifier);

    const rotated = await refresh(tokens.refresh_token);
    assert.equal(rotated.status, 200);
    const next = rotated.body as unknown as Tokens;
    assert.notEqual(next.refresh_token, tokens.refresh_token);
    lb.to(b);
    assert.equal((await api('/api/page', bearer(next.access_token))).status, 200, 'B accepts the rotated access token');
    const replay = await refresh(tokens.refresh_token);
    assert.equal(replay.status, 400);
    assert.equal(replay.body.error, 'invalid_grant');

    for (const node of [b, a]) {
      lb.to(node);
      assert.equal((await api('/api/page', bearer(next.access_token))).status, 401, 'the newest access token is dead on both nodes');
    }
    assert.equal((await refresh(next.refresh_token)).body.error, 'invalid_grant', 'and so is the newest refresh token');
    assert.deepEqual(
      (await listConnections(db.kysely, credentials.siteId)).map((c) => c.status),
      ['revoked', 'revoked'],
    );
  });

  await t.test(
    'RATE_LIMIT_API counts across both nodes',
    { skip: redisUrl ? false : 'needs redis-server: without REDIS_URL each node counts on its own (docs/rate-limits.md)' },
    async () => {
      // A credential of its own, so the requests above do not count.
      const key = await createCredential(db.kysely, credentials.siteId, 'two nodes');
      const headers = { authorization: `Basic ${Buffer.from(`${key.apiId}:${key.apiKey}`).toString('base64')}` };
      const answers: Array<{ status: number; left: string | undefined }> = [];
      for (let i = 0; i < 8; i++) {
        // A node adds its hits to Redis at most every 100 ms until near the quota
        // (docs/rate-limits.md#where-the-counts-live): spaced wider, each answer sees every hit.
        // Not a wait for an event but the clients' pace, which a busy machine only makes slower;
        // the nodes' clocks are their own processes', which a test cannot move.
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 150));
        lb.to(i % 2 ? b : a);
        const response = await api('/api/page', headers);
        await response.arrayBuffer();
        answers.push({ status: response.status, left: /;r=(\d+)/.exec(response.headers.get('ratelimit') ?? '')?.[1] });
      }
      assert.deepEqual(
        answers,
        [...['5', '4', '3', '2', '1', '0'].map((left) => ({ status: 200, left })), { status: 429, left: '0' }, { status: 429, left: '0' }],
        'six in all, three on each node, then 429 on both',
      );
    },
  );

  assert.ok(lb.served(a) > 0 && lb.served(b) > 0, 'both nodes answered');
  a.child.kill('SIGTERM');
  b.child.kill('SIGTERM');
  assert.deepEqual(await Promise.all([a.exit, b.exit]), [
    { code: 0, signal: null },
    { code: 0, signal: null },
  ]);
});
