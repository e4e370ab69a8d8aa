import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHANGE_LOG } from '../../test/helpers.js';
import { authorizeCode, connect, startOAuthApp } from '../../test/oauth.helpers.js';
import { testConfig } from '../config.js';
import type { Db } from '../db/database.js';
import { BadRequestError, NotFoundError } from '../errors.js';
import { parseArguments, UsageError } from './command.js';
import { COMMANDS } from './commands.js';
import { camelCased } from './output.js';

/** `cms <line>` on the test's own database, parsed as main parses it; resolves with what it prints. */
async function run(db: Db, line: string): Promise<string> {
  const words = line.split(' ');
  const command = COMMANDS.find((c) => c.name === `${words[0]} ${words[1]}`);
  assert.ok(command, line);
  const { values, positionals } = parseArguments(command, words.slice(2));
  const json = values.json === true;
  const result = await command.run({
    json,
    values,
    positionals,
    config: () => testConfig(),
    db: async () => db,
    changeLog: async () => CHANGE_LOG,
  });
  assert.ok(result, line);
  return json ? JSON.stringify(camelCased(result.json)) : result.text;
}

test('cms client create prints the client_id; its redirect URIs are checked', async (t) => {
  const a = await startOAuthApp(t);
  const out = JSON.parse(
    await run(a.db, 'client create --name CLI --redirect-uri https://cli.example/cb --redirect-uri http://127.0.0.1:9000/cb --json'),
  );
  assert.match(out.clientId, /^cl_[\w-]{22}$/);
  assert.deepEqual(out.redirectUris, ['https://cli.example/cb', 'http://127.0.0.1:9000/cb']);
  const { clients } = JSON.parse(await run(a.db, 'client list --json'));
  assert.ok(clients.some((c: { clientId: string }) => c.clientId === out.clientId));
  // Wrong arguments are usage mistakes (exit 2); well-formed but unacceptable values are refused by the service (exit 1).
  for (const usage of [
    'client create --redirect-uri https://x.example/cb',
    'client create --name N --redirect-uri https://x.example/cb --bogus',
  ]) {
    await assert.rejects(run(a.db, usage), UsageError, usage);
  }
  for (const bad of [
    'client create --name N',
    'client create --name N --redirect-uri http://x.example/cb',
    'client create --name N --redirect-uri https://x.example/cb#f',
    'client create --name N --redirect-uri https://*.example/cb',
  ]) {
    await assert.rejects(run(a.db, bad), BadRequestError, bad);
  }
});

test('cms connection list and revoke: the revoked connection stops working at once', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a, { scope: 'everything:read product:read' });
  const {
    connections: [connection],
  } = JSON.parse(await run(a.db, `connection list --site ${a.site.siteId} --json`));
  assert.equal(connection.status, 'active');
  assert.equal(connection.clientId, a.clientId);
  assert.equal(connection.clientName, 'Test app');
  assert.equal(connection.siteId, a.site.siteId);
  assert.deepEqual(connection.scopes, ['everything:read', 'product:read']);
  assert.ok(connection.lastUsedAt, 'the code exchange counts as use');
  assert.equal(connection.kind, 'api');
  assert.match(await run(a.db, `connection list --site ${a.site2.siteId}`), /No OAuth connections/);

  assert.match(await run(a.db, `connection revoke ${connection.id}`), /Revoked connection/);
  const read = await a.app.inject({ url: '/api/page', headers: { authorization: `Bearer ${tokens.access_token}` } });
  assert.equal(read.statusCode, 401);
  assert.match(String(read.headers['www-authenticate']), /error="invalid_token"/);
  const refreshed = await fetch(`${a.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', client_id: a.clientId, refresh_token: tokens.refresh_token }),
  });
  assert.equal(((await refreshed.json()) as { error: string }).error, 'invalid_grant');
  const {
    connections: [after],
  } = JSON.parse(await run(a.db, `connection list --site ${a.site.siteId} --json`));
  assert.equal(after.status, 'revoked');
  assert.ok(after.revokedAt);
  await assert.rejects(run(a.db, 'connection revoke con_unknown'), NotFoundError);
  await assert.rejects(run(a.db, 'connection list --site x'), UsageError);
});

test('cms connection list: one line per connection id, REST API or MCP; an unexchanged code is pending, not active', async (t) => {
  const a = await startOAuthApp(t);
  await connect(a);
  await connect(a, { resource: `${a.base}/mcp` });
  await authorizeCode(a);
  const { connections } = JSON.parse(await run(a.db, `connection list --site ${a.site.siteId} --json`));
  const lines = (await run(a.db, `connection list --site ${a.site.siteId}`)).split('\n');
  assert.equal(lines.length, 3);
  const columns = new Map(lines.map((line) => [line.split('\t')[0], line.split('\t')]));
  const described = connections
    .map((c: { id: string; kind: string; status: string }) => [c.kind, c.status, columns.get(c.id)?.slice(1, 4).join(' | ')])
    .sort();
  assert.deepEqual(described, [
    ['api', 'active', `active | REST API | Test app (${a.clientId})`],
    ['api', 'pending', `pending | REST API | Test app (${a.clientId})`],
    ['mcp', 'active', `active | MCP | Test app (${a.clientId})`],
  ]);
});

test('cms user remove-site ends the connections the user approved for that website, and only those', async (t) => {
  const a = await startOAuthApp(t);
  const first = await connect(a, { scope: 'everything:read' });
  const second = await connect(a, { scope: 'everything:read', site: a.site2.siteId });
  const read = (token: string) => a.app.inject({ url: '/api/page', headers: { authorization: `Bearer ${token}` } });
  assert.equal((await read(first.tokens.access_token)).statusCode, 200);
  assert.equal((await read(second.tokens.access_token)).statusCode, 200);

  const removed = JSON.parse(await run(a.db, `user remove-site --email ${a.owner.email} --site ${a.site2.siteId} --json`));
  assert.equal(removed.revokedConnections, 1);
  assert.equal((await read(second.tokens.access_token)).statusCode, 401, "the removed website's token stops at once");
  assert.equal((await read(first.tokens.access_token)).statusCode, 200, "the other website's connection lives on");
  const { users } = JSON.parse(await run(a.db, `user list --site ${a.site.siteId} --json`));
  assert.deepEqual(
    users[0].sites.map((s: { id: number }) => s.id),
    [a.site.siteId],
  );
});
