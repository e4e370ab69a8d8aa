import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHANGE_LOG, json } from '../../test/helpers.js';
import { connect, startOAuthApp } from '../../test/oauth.helpers.js';
import { testConfig } from '../config.js';
import type { Db } from '../db/database.js';
import { NotFoundError } from '../errors.js';
import { listConnections } from '../oauth/connections/connection.service.js';
import { parseArguments, UsageError } from './command.js';
import { COMMANDS } from './commands.js';

/** `cms connection <words>` on the test's own database, as main runs it; resolves with what it prints. */
async function cms(db: Db, dataDir: string, ...words: string[]): Promise<string> {
  const command = COMMANDS.find((c) => c.name === `${words[0]} ${words[1]}`);
  assert.ok(command, words.join(' '));
  const { values, positionals } = parseArguments(command, words.slice(2));
  const asJson = values.json === true;
  const result = await command.run({
    json: asJson,
    values,
    positionals,
    config: () => testConfig({ dataDir }),
    db: async () => db,
    changeLog: async () => CHANGE_LOG,
  });
  assert.ok(result);
  return asJson ? JSON.stringify(result.json) : result.text;
}

test('cms connection changes lists what a connection did; cms connection undo takes it back and answers what it did as JSON', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a, { scope: 'everything:write' });
  const [connection] = await listConnections(a.db.kysely, a.site.siteId);
  assert.ok(connection);
  const since = '2000-01-01 00:00:00';
  const page = await a.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: { authorization: `Bearer ${tokens.access_token}` },
    payload: { page_usertitle: 'By the app' },
  });
  const made = json(page).data[0];

  const listed = JSON.parse(await cms(a.db, a.config.dataDir, 'connection', 'changes', connection.id, '--since', since, '--json'));
  assert.deepEqual(
    listed.changes.map((c: { op: string; type: string; id: number }) => [c.op, c.type, c.id]),
    [['create', 'page', made.page]],
  );
  assert.match(await cms(a.db, a.config.dataDir, 'connection', 'changes', connection.id), new RegExp(`create\tpage ${made.page}`));

  const undone = JSON.parse(await cms(a.db, a.config.dataDir, 'connection', 'undo', connection.id, '--since', since, '--json'));
  assert.deepEqual(undone, { restored: [], deleted: [{ type: 'page', id: made.page }], unchanged: [], skipped: [] });
  assert.equal((await a.app.inject({ url: `/api/page/${made.page}`, headers: a.site.headers })).statusCode, 404);
  const revisions = json(await a.app.inject({ url: `/api/page/${made.page}/revisions`, headers: a.site.headers })).data;
  assert.equal(revisions[0].op, 'delete');
  assert.equal(revisions[0].actor.kind, 'cli');
  assert.match(revisions[0].actor.name, /^cms connection undo/);

  await assert.rejects(cms(a.db, a.config.dataDir, 'connection', 'undo', connection.id), UsageError, 'without --since');
  await assert.rejects(
    cms(a.db, a.config.dataDir, 'connection', 'undo', connection.id, '--since', 'yesterday'),
    /--since must be "YYYY-MM-DD HH:MM:SS"/,
  );
  await assert.rejects(
    cms(a.db, a.config.dataDir, 'connection', 'undo', connection.id, '--since', '2026-02-30 10:00:00'),
    /--since "2026-02-30 10:00:00" is not a date: there is no such day or time/,
  );
  await assert.rejects(cms(a.db, a.config.dataDir, 'connection', 'changes', 'no-such-connection'), NotFoundError);
});
