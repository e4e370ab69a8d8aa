import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { type Kysely, sql } from 'kysely';
import { TEST_DATABASE_URL } from '../../test/helpers.js';
import { loadConfig } from '../config.js';
import { ConfigError } from '../config-error.js';
import { createDatabase } from './database.js';
import { isDatabaseUnavailable } from './errors.js';
import { preparedLookup } from './prepared-lookup.js';
import { withRequestTransaction, writeHandle } from './request-transaction.js';
import type { Database } from './schema.js';

/** A folder of its own for the test's database files, removed after it. */
function tempFolder(t: TestContext): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cms-db-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A SQLite database in a file (WAL, group commit) in a folder of its own, closed after the test. */
function fileDatabase(t: TestContext, name: string) {
  const file = path.join(tempFolder(t), name);
  const db = createDatabase(`sqlite:${file}`);
  t.after(() => db.close());
  return { file, db };
}

test('SQLite opens in WAL mode; with SQLITE_SYNCHRONOUS=full (the default) commits are made durable by group commit, with normal not', async (t) => {
  const dir = tempFolder(t);
  const opened = async (synchronous?: 'full' | 'normal') => {
    const db = createDatabase(`sqlite:${path.join(dir, `${synchronous ?? 'default'}.sqlite`)}`, synchronous ? { synchronous } : {});
    const pragma = async (name: string) => Object.values((await sql.raw(`pragma ${name}`).execute(db.kysely)).rows[0] as object)[0];
    // The connection never fsyncs at commit itself (NORMAL); the group commit does, for every commit, when full.
    const result = {
      journal: await pragma('journal_mode'),
      sync: await pragma('synchronous'),
      groupCommit: db.groupCommit !== undefined,
    };
    await db.close();
    return result;
  };
  assert.deepEqual(await opened(), { journal: 'wal', sync: 1, groupCommit: true }, 'full by default');
  assert.deepEqual(await opened('full'), { journal: 'wal', sync: 1, groupCommit: true });
  assert.deepEqual(await opened('normal'), { journal: 'wal', sync: 1, groupCommit: false });
  const memory = createDatabase('sqlite::memory:');
  assert.equal(memory.groupCommit, undefined, 'an in-memory database has no log to sync');
  await memory.close();

  assert.equal(loadConfig({ DATA_DIR: dir }).sqliteSynchronous, 'full');
  assert.equal(loadConfig({ DATA_DIR: dir, SQLITE_SYNCHRONOUS: 'NORMAL' }).sqliteSynchronous, 'normal');
  assert.throws(() => loadConfig({ DATA_DIR: dir, SQLITE_SYNCHRONOUS: 'off' }), ConfigError);
});

test('group commit: no write, commit or read settles before what was committed is on disk, and concurrent commits share flushes', async (t) => {
  const { db } = fileDatabase(t, 'group.sqlite');
  const wal = db.groupCommit!;
  await sql`create table t (a integer primary key, b text)`.execute(db.kysely);
  const durable = () => assert.equal(wal.synced, wal.written, 'everything written is on disk');

  // A write in autocommit, a transaction, and the request transaction a token request commits.
  await sql`insert into t values (1, 'one')`.execute(db.kysely);
  durable();
  await db.kysely.transaction().execute(async (trx) => {
    await sql`insert into t values (2, 'two')`.execute(trx);
    await sql`insert into t values (3, 'three')`.execute(trx);
  });
  durable();
  await withRequestTransaction(
    db.kysely,
    async () => {
      await sql`insert into t values (4, 'four')`.execute(await writeHandle(db.kysely));
    },
    () => true,
  );
  durable();

  // 40 writers at once: all durable when they settle, with far fewer flushes than 40.
  const before = wal.flushes;
  await Promise.all(Array.from({ length: 40 }, (_, i) => sql`insert into t values (${100 + i}, 'many')`.execute(db.kysely)));
  durable();
  const flushes = wal.flushes - before;
  assert.ok(flushes >= 1 && flushes < 40, `40 commits took ${flushes} flushes`);

  // A read that sees a commit whose flush is still running waits for it. Microtasks only run
  // until the insert has gone out: the flush, on the thread pool, cannot end before a macrotask.
  const k = db.kysely as unknown as Kysely<{ t: { a: number; b: string } }>;
  const build = (_db: unknown, { a }: { a: number }) => k.selectFrom('t').select(['a', 'b']).where('a', '=', a);
  await preparedLookup(db.kysely, build as never, { a: 1 }); // prepared, so the read below is the statement's
  const written = wal.written;
  const insert = sql`insert into t values (500, 'late')`.execute(db.kysely);
  while (wal.written === written) await Promise.resolve();
  assert.ok(wal.synced < wal.written, 'the insert is committed and not yet on disk');
  const row = await preparedLookup(db.kysely, build as never, { a: 500 });
  assert.deepEqual(row, { a: 500, b: 'late' });
  assert.ok(wal.synced >= written + 1, 'the read that saw the row settled once the row was on disk');
  await insert;
});

test('group commit: once a flush of the log fails, every later write, read and readiness check fails with it', async (t) => {
  const { file, db } = fileDatabase(t, 'lost.sqlite');
  await db.ping();
  // A real fault: the log is gone from under the connection before the first flush opened it.
  // SQLite goes on writing to the unlinked file, which no flush can reach.
  rmSync(`${file}-wal`);
  const lost = /write-ahead log could not be synced to disk/;
  await assert.rejects(sql`create table t (a integer)`.execute(db.kysely), lost);
  await assert.rejects(sql`select 1 as one`.execute(db.kysely), lost, 'a read fails too: the write it may see is not on disk');
  await assert.rejects(
    db.kysely.transaction().execute((trx) => sql`select 1 as one`.execute(trx)),
    lost,
  );
  await assert.rejects(db.ping(), lost, '/readyz answers 503');
});

test("SQLite reads through a memory map of SQLITE_MMAP_MB megabytes, 2047 MB (SQLite's limit) by default, 0 for none", async (t) => {
  const dir = tempFolder(t);
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

test("SQLite: a prepared lookup answers at once, but while a transaction is open on the connection it waits behind it and never sees the transaction's uncommitted rows", async (t) => {
  const db = createDatabase('sqlite::memory:');
  t.after(() => db.close());
  await sql`create table t (a integer, b text)`.execute(db.kysely);
  await sql`insert into t values (1, 'one')`.execute(db.kysely);
  const k = db.kysely as unknown as Kysely<{ t: { a: number; b: string } }>;
  const build = (_db: unknown, { a }: { a: number }) => k.selectFrom('t').select(['a', 'b']).where('a', '=', a);
  const read = (a: number) => preparedLookup(db.kysely, build as never, { a });
  assert.deepEqual(read(1), { a: 1, b: 'one' }, 'a row, not a promise');

  let during: unknown;
  await assert.rejects(
    db.kysely.transaction().execute(async (trx) => {
      await sql`insert into t values (2, 'uncommitted')`.execute(trx);
      during = read(2);
      assert.ok(during instanceof Promise, 'through Kysely, queued behind the transaction');
      throw new Error('roll back');
    }),
    /roll back/,
  );
  assert.equal(await during, undefined, 'the rolled-back row was never seen');
  assert.deepEqual(read(1), { a: 1, b: 'one' }, 'at once again once the transaction has ended');

  await db.kysely.transaction().execute(async (trx) => {
    await sql`insert into t values (3, 'three')`.execute(trx);
    during = read(3);
  });
  assert.deepEqual(await during, { a: 3, b: 'three' }, 'read after the commit');
});

test("SQLite: the prepared lookups of one tick of the event loop share one read transaction, which ends with the tick or before any statement of Kysely's", async (t) => {
  const { file, db } = fileDatabase(t, 'ticks.sqlite');
  await sql`create table t (a integer primary key, b text)`.execute(db.kysely);
  await sql`insert into t values (1, 'one')`.execute(db.kysely);
  // Another process's connection, as the CLI's would be.
  const other = new SQLite(file);
  t.after(() => other.close());
  const set = other.prepare('update t set b = ? where a = 1');
  const k = db.kysely as unknown as Kysely<{ t: { a: number; b: string } }>;
  const build = (_db: unknown, { a }: { a: number }) => k.selectFrom('t').select(['a', 'b']).where('a', '=', a);
  const read = () => preparedLookup(db.kysely, build as never, { a: 1 });
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  await nextTurn();
  assert.deepEqual(read(), { a: 1, b: 'one' });
  set.run('two');
  assert.deepEqual(read(), { a: 1, b: 'one' }, 'the same tick reads the snapshot its first read took');
  await nextTurn();
  assert.deepEqual(read(), { a: 1, b: 'two' }, 'the next tick sees the commit');

  set.run('three');
  const viaKysely = await sql<{ b: string }>`select b from t where a = 1`.execute(db.kysely);
  assert.deepEqual(viaKysely.rows, [{ b: 'three' }], "a statement of Kysely's runs outside the snapshot, in the same tick");
  assert.deepEqual(read(), { a: 1, b: 'three' }, 'and the lookup after it takes a new one');

  // A write and a transaction of Kysely's in the tick of a prepared lookup: neither meets its transaction.
  await sql`insert into t values (2, 'written')`.execute(db.kysely);
  assert.deepEqual(preparedLookup(db.kysely, build as never, { a: 2 }), { a: 2, b: 'written' });
  await db.kysely.transaction().execute(async (trx) => {
    await sql`update t set b = 'in a transaction' where a = 2`.execute(trx);
  });
  assert.deepEqual(preparedLookup(db.kysely, build as never, { a: 2 }), { a: 2, b: 'in a transaction' });
  await nextTurn();
  assert.equal(other.prepare('select b from t where a = 2').pluck().get(), 'in a transaction', 'committed for every connection');
});

test('preparedLookup binds arguments by name, keeps the query constants, and refuses a build that alters an argument', async (t) => {
  const db = createDatabase('sqlite::memory:');
  t.after(() => db.close());
  await sql`create table t (a text, b text, c integer)`.execute(db.kysely);
  await sql`insert into t values ('x', 'fixed', 1), ('y', 'fixed', 2), ('x', 'other', 3)`.execute(db.kysely);
  const k = db.kysely as unknown as Kysely<{ t: { a: string; b: string; c: number } }>;
  // The constant 'fixed' sits between the two arguments in the SQL text; arguments go by name.
  const build = (_db: unknown, { c, a }: { a: string; c: number }) =>
    k.selectFrom('t').select(['a', 'b', 'c']).where('c', '>=', c).where('b', '=', 'fixed').where('a', '=', a);
  const run = (args: { a: string; c: number }) => preparedLookup(db.kysely, build as never, args) as Promise<{ c: number } | undefined>;
  assert.deepEqual(await run({ a: 'y', c: 1 }), { a: 'y', b: 'fixed', c: 2 });
  assert.deepEqual(await run({ c: 2, a: 'x' }), undefined, 'x with c >= 2 is only the "other" row');
  assert.deepEqual(await run({ a: 'x', c: 0 }), { a: 'x', b: 'fixed', c: 1 });
  // The same answers through Kysely, as PostgreSQL and transactions run it.
  assert.deepEqual(await build(db.kysely, { a: 'y', c: 1 }).executeTakeFirst(), { a: 'y', b: 'fixed', c: 2 });

  const altered = (_db: unknown, { a }: { a: string }) => k.selectFrom('t').select('a').where('a', '=', a.toUpperCase());
  assert.throws(() => preparedLookup(db.kysely, altered as never, { a: 'x' }), /argument "a" does not reach the query/);
});

test('PostgreSQL: preparedLookup runs a named statement, parsed once per connection; a transaction reads through Kysely', {
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
  const run = (handle: typeof db.kysely, args: { a: string; c: number }) => preparedLookup(handle, build as never, args);
  const prepared = async () =>
    (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(db.kysely)).rows;

  assert.deepEqual(await run(db.kysely, { a: 'y', c: 1 }), { a: 'y', b: 'fixed', c: 2 });
  assert.deepEqual(await run(db.kysely, { c: 2, a: 'x' }), undefined);
  assert.deepEqual(await run(db.kysely, { a: 'x', c: 0 }), { a: 'x', b: 'fixed', c: 1 });
  const named = (await prepared()).filter((p) => p.statement.includes('"hot_t"'));
  assert.equal(named.length, 1, 'one statement for the three reads');
  assert.match(named[0]!.name, /^lookup_\d+$/);

  const inTransaction = await db.kysely.transaction().execute(async (trx) => run(trx, { a: 'y', c: 0 }));
  assert.deepEqual(inTransaction, { a: 'y', b: 'fixed', c: 2 });
  assert.equal((await prepared()).filter((p) => p.statement.includes('"hot_t"')).length, 1, 'the transaction prepared nothing');
});

/** Only turns a loss never reported, which would leave `reported()` waiting, into a failure. */
const REPORTED_WITHIN_MS = 60_000;

/**
 * A PostgreSQL pool of one connection whose losses are recorded, and a second database handle to
 * terminate its backend with; `reported` resolves when the first loss is told.
 */
function terminable(t: TestContext) {
  const lost: Error[] = [];
  let told!: () => void;
  const first = new Promise<void>((resolve) => (told = resolve));
  const db = createDatabase(TEST_DATABASE_URL!, {
    poolSize: 1,
    onConnectionLost: (error) => {
      lost.push(error);
      told();
    },
  });
  t.after(() => db.close());
  const admin = createDatabase(TEST_DATABASE_URL!, { poolSize: 1 });
  t.after(() => admin.close());
  return { db, admin, lost, reported: () => first };
}

test('PostgreSQL: a pooled connection the server closes is reported and replaced; the process lives on', {
  skip: TEST_DATABASE_URL ? false : 'PostgreSQL only (set TEST_DATABASE_URL)',
  timeout: REPORTED_WITHIN_MS,
}, async (t) => {
  const { db, admin, lost, reported } = terminable(t);
  const pid = async () => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db.kysely)).rows[0]!.pid;
  const before = await pid();
  // What a restart or failover does to every idle connection; without a listener, pg's 'error'
  // event would end this process (and every node's).
  await sql`select pg_terminate_backend(${before})`.execute(admin.kysely);
  await reported();
  assert.equal((lost[0] as { code?: string } | undefined)?.code, '57P01', 'admin_shutdown, reported');
  assert.notEqual(await pid(), before, 'the next query runs on a new connection');
  await db.ping();
});

test('PostgreSQL: a connection lost inside a transaction fails it as unavailable, is reported and never reused; the process lives on', {
  skip: TEST_DATABASE_URL ? false : 'PostgreSQL only (set TEST_DATABASE_URL)',
  timeout: REPORTED_WITHIN_MS,
}, async (t) => {
  const { db, admin, lost, reported } = terminable(t);
  const pidOf = async (handle: Kysely<Database>) =>
    (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(handle)).rows[0]!.pid;
  // Checked out by the transaction, between two statements: pg-pool does not listen to it then.
  const failed = await db.kysely
    .transaction()
    .execute(async (trx) => {
      const pid = await pidOf(trx);
      await sql`select pg_terminate_backend(${pid})`.execute(admin.kysely);
      await reported();
      await sql`select 1`.execute(trx);
      return pid;
    })
    .then(
      () => assert.fail('the transaction cannot go on without its connection'),
      (error: unknown) => error,
    );
  assert.ok(lost.length >= 1, 'the lost connection is reported');
  assert.ok(isDatabaseUnavailable(failed), `answered as unavailable: ${String(failed)}`);
  await db.ping();
  assert.equal((await db.kysely.transaction().execute(async (trx) => sql<{ n: number }>`select 1 as n`.execute(trx))).rows[0]?.n, 1);
});

test('a database that does not answer is unavailable (a 503), a refused statement is not', async (t) => {
  const { port } = await new Promise<{ port: number }>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const address = probe.address() as net.AddressInfo;
      probe.close(() => resolve(address));
    });
  });
  const db = createDatabase(`postgres://postgres@127.0.0.1:${port}/none`, { poolSize: 1 });
  t.after(() => db.close());
  const refused = await sql`select 1`.execute(db.kysely).then(
    () => assert.fail('nothing listens there'),
    (error: unknown) => error,
  );
  assert.ok(isDatabaseUnavailable(refused), String(refused));
  const sqlite = createDatabase('sqlite::memory:');
  t.after(() => sqlite.close());
  const invalid = await sql`select * from no_such_table`.execute(sqlite.kysely).then(
    () => assert.fail('no such table'),
    (error: unknown) => error,
  );
  assert.equal(isDatabaseUnavailable(invalid), false);
  // A client that hangs up mid-request has the same code as a database connection reset, but no system call.
  const aborted = Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
  assert.equal(isDatabaseUnavailable(aborted), false);
  assert.equal(isDatabaseUnavailable(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' })), true);
});

test('DATABASE_POOL_SIZE: 10 by default, a whole number from 1 to 1000', async (t) => {
  const dir = tempFolder(t);
  assert.equal(loadConfig({ DATA_DIR: dir }).databasePoolSize, 10);
  assert.equal(loadConfig({ DATA_DIR: dir, DATABASE_POOL_SIZE: '25' }).databasePoolSize, 25);
  for (const wrong of ['0', '1001', 'ten', '2.5']) {
    assert.throws(() => loadConfig({ DATA_DIR: dir, DATABASE_POOL_SIZE: wrong }), ConfigError, wrong);
  }
});
