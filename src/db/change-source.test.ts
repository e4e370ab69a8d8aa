import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { createTestDatabase, TEST_DATABASE_URL } from '../../test/helpers.js';
import { until } from '../../test/until.js';
import { ACCESS_TABLES, accessTriggerNames, CHANGES_CHANNEL, ChangeSource, NOTIFY_FUNCTION, statementKind } from './change-source.js';

test('statements are told apart: reads, the ends of transactions, writes to the tables that decide access', () => {
  assert.equal(statementKind('select "api_id" from "api_credentials" where "api_id" = ?'), 'read');
  assert.equal(statementKind('  pragma data_version'), 'read');
  assert.equal(statementKind('begin'), 'begin');
  assert.equal(statementKind('start transaction isolation level serializable'), 'begin');
  assert.equal(statementKind('commit'), 'end');
  assert.equal(statementKind('ROLLBACK'), 'end');
  assert.equal(statementKind('update "api_credentials" set "revoked_at" = ? where "api_id" = ?'), 'write');
  assert.equal(statementKind('delete from "oauth_payloads" where "grant_id" = $1'), 'write');
  assert.equal(
    statementKind('insert into "oauth_payloads" ("model", "id") values ($1, $2) on conflict do update set "payload" = $3'),
    'write',
  );
  assert.equal(statementKind('delete from "sites" where "id" = ?'), 'write', 'cascades to credentials');
  assert.equal(statementKind('update "pages" set "page_usertitle" = ? where "page" = ?'), 'read', 'not an access table');
});

test('every table of ACCESS_TABLES counts as written on SQLite, from the one list', () => {
  assert.ok(ACCESS_TABLES.length >= 7);
  for (const { table } of ACCESS_TABLES) assert.equal(statementKind(`delete from "${table}" where "id" = ?`), 'write', table);
});

test('a change source counts changes, and whether they are heard is its remote side', async () => {
  let heard = false;
  let tell!: () => void;
  const changes = new ChangeSource((changed) => {
    tell = changed;
    return { fresh: () => heard, close: async () => {} };
  });
  assert.equal(changes.fresh(), false);
  heard = true;
  const before = changes.generation;
  tell();
  changes.changed();
  assert.equal(changes.generation, before + 2);
  assert.equal(changes.fresh(), true);
  await changes.close();
  assert.equal(changes.generation, before + 3, 'closing counts as a change: nothing read before is used after');
});

test('PostgreSQL: every table of ACCESS_TABLES has the triggers generated for it, and they notify what counts only', {
  skip: !TEST_DATABASE_URL,
}, async (t) => {
  const db = await createTestDatabase(t);
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${db.schema}` });
  await admin.connect();
  t.after(() => admin.end());
  const { rows } = await admin.query<{ table: string; name: string; fn: string }>(
    `select c.relname as table, tg.tgname as name, p.proname as fn
       from pg_trigger tg join pg_class c on c.oid = tg.tgrelid join pg_namespace n on n.oid = c.relnamespace
       join pg_proc p on p.oid = tg.tgfoid
      where n.nspname = $1 and not tg.tgisinternal`,
    [db.schema],
  );
  for (const { table, columns } of ACCESS_TABLES) {
    const names = accessTriggerNames(table);
    const expected = columns ? [names.deleted, names.changed] : [names.deleted];
    for (const name of expected) {
      assert.ok(
        rows.some((r) => r.table === table && r.name === name && r.fn === NOTIFY_FUNCTION),
        `${table} has no trigger ${name}: a table added to ACCESS_TABLES needs a migration that calls accessTriggers for it`,
      );
    }
  }

  // What notifies: a revocation does, a last use does not. The channel is the database's, so other
  // schemas' writes (other test files running beside this one) are heard too; the writes below go
  // through this connection, and only its own backend's notifications count.
  const notes: string[] = [];
  const { rows: backend } = await admin.query<{ pid: number }>('select pg_backend_pid() as pid');
  const pid = backend[0]?.pid;
  await admin.query(`LISTEN ${CHANGES_CHANNEL}`);
  admin.on('notification', (n) => {
    if (n.processId === pid) notes.push(n.payload ?? '');
  });
  const { rows: sites } = await admin.query<{ id: number }>(
    `insert into sites (name, created_at) values ('Triggers', '2026-01-01 00:00:00') returning id`,
  );
  const siteId = sites[0]?.id;
  await admin.query(
    `insert into api_credentials (api_id, key_hash, site_id, label, created_at)
     values ('trigger-test', 'x', $1, 'l', '2026-01-01 00:00:00')`,
    [siteId],
  );
  await admin.query(`update api_credentials set last_used_at = '2026-01-02 00:00:00' where api_id = 'trigger-test'`);
  assert.deepEqual(notes, [], 'an insert and a last use send nothing');
  await admin.query(`update api_credentials set revoked_at = '2026-01-03 00:00:00' where api_id = 'trigger-test'`);
  await admin.query('delete from sites where id = $1', [siteId]);
  // A session hears its own notifications, each before the answer to the statement that sent it
  // (each statement here commits on its own). One a write above should not have sent would be
  // among these and fail the comparison.
  await until('three notifications', async () => {
    await admin.query('select 1');
    return notes.length >= 3;
  });
  assert.deepEqual(notes.sort(), ['api_credentials', 'api_credentials', 'sites']);
});
