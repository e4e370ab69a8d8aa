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

  // What notifies: a revocation does, a last use does not.
  const notes: string[] = [];
  await admin.query(`LISTEN ${CHANGES_CHANNEL}`);
  admin.on('notification', (n) => notes.push(n.payload ?? ''));
  const site = await db.kysely
    .insertInto('sites')
    .values({ name: 'Triggers', created_at: '2026-01-01 00:00:00' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const row = { api_id: 'trigger-test', key_hash: 'x', site_id: site.id, label: 'l', created_at: '2026-01-01 00:00:00' };
  await db.kysely.insertInto('api_credentials').values(row).execute();
  await db.kysely.updateTable('api_credentials').set({ last_used_at: '2026-01-02 00:00:00' }).where('api_id', '=', row.api_id).execute();
  await admin.query('select 1');
  assert.deepEqual(notes, [], 'an insert and a last use send nothing');
  await db.kysely.updateTable('api_credentials').set({ revoked_at: '2026-01-03 00:00:00' }).where('api_id', '=', row.api_id).execute();
  await db.kysely.deleteFrom('sites').where('id', '=', site.id).execute();
  // Each query's round trip gives the listening connection a turn to take its notifications. One a
  // write above should not have sent would be among these (they arrive in commit order) and fail
  // the comparison.
  await until('three notifications', async () => {
    await admin.query('select 1');
    return notes.length >= 3;
  });
  assert.deepEqual(notes.sort(), ['api_credentials', 'api_credentials', 'sites']);
});
