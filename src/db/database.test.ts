import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { TEST_DATABASE_URL } from '../../test/helpers.js';
import { ConfigError, loadConfig } from '../config.js';
import { createDatabase, hotRead } from './database.js';

test('SQLite opens in WAL mode and fsyncs every commit unless SQLITE_SYNCHRONOUS=normal', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cms-db-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const pragmas = async (synchronous?: 'full' | 'normal') => {
    const db = createDatabase(`sqlite:${path.join(dir, `${synchronous ?? 'default'}.sqlite`)}`, synchronous ? { synchronous } : {});
    const pragma = async (name: string) => Object.values((await sql.raw(`pragma ${name}`).execute(db.kysely)).rows[0] as object)[0];
    const result = { journal: await pragma('journal_mode'), sync: await pragma('synchronous') };
    await db.close();
    return result;
  };
  assert.deepEqual(await pragmas(), { journal: 'wal', sync: 2 }, 'FULL by default');
  assert.deepEqual(await pragmas('full'), { journal: 'wal', sync: 2 });
  assert.deepEqual(await pragmas('normal'), { journal: 'wal', sync: 1 });

  assert.equal(loadConfig({ DATA_DIR: dir }).sqliteSynchronous, 'full');
  assert.equal(loadConfig({ DATA_DIR: dir, SQLITE_SYNCHRONOUS: 'NORMAL' }).sqliteSynchronous, 'normal');
  assert.throws(() => loadConfig({ DATA_DIR: dir, SQLITE_SYNCHRONOUS: 'off' }), ConfigError);
});

test("SQLite reads through a memory map of SQLITE_MMAP_MB megabytes, 2047 MB (SQLite's limit) by default, 0 for none", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cms-db-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const mmapSize = async (mmapMB?: number) => {
    const db = createDatabase(`sqlite:${path.join(dir, `${mmapMB ?? 'default'}.sqlite`)}`, mmapMB === undefined ? {} : { mmapMB });
    const rows = (await sql<{ mmap_size: number }>`pragma mmap_size`.execute(db.kysely)).rows;
    await db.close();
    return rows[0]?.mmap_size;
  };
  assert.equal(await mmapSize(), 2047 * 1024 * 1024);
  assert.equal(await mmapSize(0), 0);
  assert.equal(await mmapSize(64), 64 * 1024 * 1024);

  assert.equal(loadConfig({ DATA_DIR: dir }).sqliteMmapMB, 2047);
  assert.equal(loadConfig({ DATA_DIR: dir, SQLITE_MMAP_MB: '0' }).sqliteMmapMB, 0);
  assert.throws(() => loadConfig({ DATA_DIR: dir, SQLITE_MMAP_MB: '4096' }), /SQLITE_MMAP_MB must be between 0 and 2047/);
  assert.throws(() => loadConfig({ DATA_DIR: dir, SQLITE_MMAP_MB: '1g' }), /SQLITE_MMAP_MB must be a whole number/);
});

test('hotRead binds arguments by name, keeps the query constants, and refuses a build that alters an argument', async (t) => {
  const db = createDatabase('sqlite::memory:');
  t.after(() => db.close());
  await sql`create table t (a text, b text, c integer)`.execute(db.kysely);
  await sql`insert into t values ('x', 'fixed', 1), ('y', 'fixed', 2), ('x', 'other', 3)`.execute(db.kysely);
  const k = db.kysely as unknown as Kysely<{ t: { a: string; b: string; c: number } }>;
  // The constant 'fixed' sits between the two arguments in the SQL text; arguments go by name.
  const build = (_db: unknown, { c, a }: { a: string; c: number }) =>
    k.selectFrom('t').select(['a', 'b', 'c']).where('c', '>=', c).where('b', '=', 'fixed').where('a', '=', a);
  const run = (args: { a: string; c: number }) => hotRead(db.kysely, build as never, args) as Promise<{ c: number } | undefined>;
  assert.deepEqual(await run({ a: 'y', c: 1 }), { a: 'y', b: 'fixed', c: 2 });
  assert.deepEqual(await run({ c: 2, a: 'x' }), undefined, 'x with c >= 2 is only the "other" row');
  assert.deepEqual(await run({ a: 'x', c: 0 }), { a: 'x', b: 'fixed', c: 1 });
  // The same answers through Kysely, as PostgreSQL and transactions run it.
  assert.deepEqual(await build(db.kysely, { a: 'y', c: 1 }).executeTakeFirst(), { a: 'y', b: 'fixed', c: 2 });

  const altered = (_db: unknown, { a }: { a: string }) => k.selectFrom('t').select('a').where('a', '=', a.toUpperCase());
  await assert.rejects(hotRead(db.kysely, altered as never, { a: 'x' }), /argument "a" does not reach the query/);
});

test('PostgreSQL: hotRead runs a named statement, parsed once per connection; a transaction reads through Kysely', {
  skip: TEST_DATABASE_URL ? false : 'PostgreSQL only (set TEST_DATABASE_URL)',
}, async (t) => {
  // One connection: the temporary table and pg_prepared_statements are that session's.
  const db = createDatabase(TEST_DATABASE_URL!, { poolSize: 1 });
  t.after(() => db.close());
  await sql`create temporary table hot_t (a text, b text, c integer)`.execute(db.kysely);
  await sql`insert into hot_t values ('x', 'fixed', 1), ('y', 'fixed', 2), ('x', 'other', 3)`.execute(db.kysely);
  const k = db.kysely as unknown as Kysely<{ hot_t: { a: string; b: string; c: number } }>;
  const build = (handle: unknown, { c, a }: { a: string; c: number }) =>
    (handle as typeof k).selectFrom('hot_t').select(['a', 'b', 'c']).where('c', '>=', c).where('b', '=', 'fixed').where('a', '=', a);
  const run = (handle: typeof db.kysely, args: { a: string; c: number }) => hotRead(handle, build as never, args);
  const prepared = async () =>
    (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(db.kysely)).rows;

  assert.deepEqual(await run(db.kysely, { a: 'y', c: 1 }), { a: 'y', b: 'fixed', c: 2 });
  assert.deepEqual(await run(db.kysely, { c: 2, a: 'x' }), undefined);
  assert.deepEqual(await run(db.kysely, { a: 'x', c: 0 }), { a: 'x', b: 'fixed', c: 1 });
  const named = (await prepared()).filter((p) => p.statement.includes('"hot_t"'));
  assert.equal(named.length, 1, 'one statement for the three reads');
  assert.match(named[0]!.name, /^hot_\d+$/);

  const inTransaction = await db.kysely.transaction().execute((trx) => run(trx, { a: 'y', c: 0 }));
  assert.deepEqual(inTransaction, { a: 'y', b: 'fixed', c: 2 });
  assert.equal((await prepared()).filter((p) => p.statement.includes('"hot_t"')).length, 1, 'the transaction prepared nothing');
});

test('PostgreSQL: a pooled connection the server closes is reported and replaced; the process lives on', {
  skip: TEST_DATABASE_URL ? false : 'PostgreSQL only (set TEST_DATABASE_URL)',
}, async (t) => {
  const lost: Error[] = [];
  const db = createDatabase(TEST_DATABASE_URL!, { poolSize: 1, onIdleConnectionError: (error) => lost.push(error) });
  t.after(() => db.close());
  const pid = async () => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db.kysely)).rows[0]!.pid;
  const before = await pid();
  // What a restart or failover does to every idle connection; without a listener, pg's 'error'
  // event would end this process (and every node's).
  const admin = createDatabase(TEST_DATABASE_URL!, { poolSize: 1 });
  t.after(() => admin.close());
  await sql`select pg_terminate_backend(${before})`.execute(admin.kysely);
  const deadline = Date.now() + 5000;
  while (lost.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal((lost[0] as { code?: string } | undefined)?.code, '57P01', 'admin_shutdown, reported');
  assert.notEqual(await pid(), before, 'the next query runs on a new connection');
  await db.ping();
});
