import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connect, startOAuthApp } from '../../test/oauth.helpers.js';
import { testConfig } from '../config.js';
import type { Db } from '../db/database.js';
import { BadRequestError, NotFoundError } from '../errors.js';
import { parseArguments, UsageError } from './command.js';
import { oauthCommands } from './oauth.commands.js';

/** `cms <line>` on the test's own database, parsed as main parses it; resolves with what it prints. */
async function run(db: Db, line: string): Promise<string> {
  const words = line.split(' ');
  const command = oauthCommands.find((c) => c.name === `${words[0]} ${words[1]}`);
  assert.ok(command, line);
  const { values, positionals } = parseArguments(command, words.slice(2));
  const json = values.json === true;
  const result = await command.run({ json, values, positionals, config: () => testConfig(), db: async () => db });
  assert.ok(result, line);
  return json ? JSON.stringify(result.json) : result.text;
}

test('cms client create prints the client_id; its redirect URIs are checked', async (t) => {
  const a = await startOAuthApp(t);
  const out = JSON.parse(
    await run(a.db, 'client create --name CLI --redirect-uri https://cli.example/cb --redirect-uri http://127.0.0.1:9000/cb --json'),
  );
  assert.match(out.client_id, /^cl_[\w-]{22}$/);
  assert.deepEqual(out.redirect_uris, ['https://cli.example/cb', 'http://127.0.0.1:9000/cb']);
  const list = JSON.parse(await run(a.db, 'client list --json'));
  assert.ok(list.some((c: { client_id: string }) => c.client_id === out.client_id));
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
  const [connection] = JSON.parse(await run(a.db, `connection list --site ${a.site.siteId} --json`));
  assert.equal(connection.status, 'active');
  assert.equal(connection.client_id, a.clientId);
  assert.equal(connection.client_name, 'Test app');
  assert.equal(connection.site_id, a.site.siteId);
  assert.deepEqual(connection.scopes, ['everything:read', 'product:read']);
  assert.ok(connection.last_used_at, 'the code exchange counts as use');
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
  const [after] = JSON.parse(await run(a.db, `connection list --site ${a.site.siteId} --json`));
  assert.equal(after.status, 'revoked');
  assert.ok(after.revoked_at);
  await assert.rejects(run(a.db, 'connection revoke con_unknown'), NotFoundError);
  await assert.rejects(run(a.db, 'connection list --site x'), UsageError);
});
