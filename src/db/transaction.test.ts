import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { addTestSite, CHANGE_LOG, createTestDatabase, TEST_DATABASE_URL } from '../../test/helpers.js';
import { SYSTEM_ACTOR } from '../content/history/change-log.js';
import { listPages, savePage } from '../content/pages/page.service.js';
import { createDatabase } from './database.js';
import { advisoryKey, inSnapshot, inTransaction, lockInTransaction } from './transaction.js';

test('service writes inside inTransaction join it: a failure later undoes them all', async (t) => {
  const db = await createTestDatabase(t);
  const { siteId } = await addTestSite(db);
  await assert.rejects(
    inTransaction(db.kysely, async (tx) => {
      const parent = await savePage(tx, CHANGE_LOG, siteId, { page_usertitle: 'Parent' }, SYSTEM_ACTOR);
      await savePage(tx, CHANGE_LOG, siteId, { page_usertitle: 'Child', page_parent: parent.record.page }, SYSTEM_ACTOR);
      throw new Error('stop');
    }),
    /stop/,
  );
  assert.equal((await listPages(db.kysely, siteId, { offset: 0, pageSize: 10 })).total, 0);

  const saved = await inTransaction(db.kysely, (tx) => savePage(tx, CHANGE_LOG, siteId, { page_usertitle: 'Kept' }, SYSTEM_ACTOR));
  assert.equal(saved.record.page_usertitle, 'Kept');
  assert.equal((await listPages(db.kysely, siteId, { offset: 0, pageSize: 10 })).total, 1);
});

test('inSnapshot: two reads agree although another connection commits between them (PostgreSQL; SQLite has one connection)', async (t) => {
  const db = await createTestDatabase(t);
  if (db.dialect !== 'postgres') return t.skip('SQLite has one connection: nothing can commit between two reads of a transaction');
  const { siteId } = await addTestSite(db);
  const count = async (handle: typeof db.kysely) =>
    Number(
      (
        await handle
          .selectFrom('pages')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('site_id', '=', siteId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  const [first, second] = await inSnapshot(db.kysely, async (snapshot) => {
    const before = await count(snapshot);
    // Another pool connection commits a page between the two reads.
    await savePage(db.kysely, CHANGE_LOG, siteId, { page_usertitle: 'Committed between' }, SYSTEM_ACTOR);
    return [before, await count(snapshot)];
  });
  assert.equal(second, first, 'the second read sees the snapshot of the first');
  assert.equal(await count(db.kysely), first + 1, 'the commit is there afterwards');
});

test("advisory locks belong to the tables' schema: the same key excludes in one schema, not across two (PostgreSQL)", async (t) => {
  if (!TEST_DATABASE_URL) return t.skip('SQLite takes no advisory locks');
  const [first, second] = [await createTestDatabase(t), await createTestDatabase(t)];
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let taken!: () => void;
  const isTaken = new Promise<void>((resolve) => (taken = resolve));
  const holder = inTransaction(first.kysely, async (tx) => {
    await lockInTransaction(tx, 7399, 1);
    taken();
    await held;
  });
  await isTaken;
  // A lock taken while another holds it would wait for ever: lock_timeout turns that wait into an
  // error (55P03), which is the answer expected in the schema that holds it.
  const tryLock = (db: typeof first) =>
    inTransaction(db.kysely, async (tx) => {
      await sql`set local lock_timeout = '100ms'`.execute(tx);
      await lockInTransaction(tx, 7399, 1);
    });
  try {
    await assert.rejects(tryLock(first), (error: { code?: string }) => error.code === '55P03', 'the same schema: it waits');
    await tryLock(second); // another schema: its own lock, free
  } finally {
    release();
    await holder;
  }
  await tryLock(first); // released
});

test('in the default schema an advisory key is the plain key, as older nodes take it (PostgreSQL)', async (t) => {
  if (!TEST_DATABASE_URL) return t.skip('SQLite takes no advisory locks');
  const db = createDatabase(TEST_DATABASE_URL, { poolSize: 1 });
  t.after(() => db.close());
  const row = await sql<{ schema: string; site: number; text: number; hashed: number }>`
    select current_schema() as schema, ${advisoryKey(42)} as site, ${advisoryKey('grant-1')} as text, hashtext('grant-1') as hashed`
    .execute(db.kysely)
    .then((result) => result.rows[0]!);
  assert.equal(row.schema, 'public');
  assert.equal(row.site, 42);
  assert.equal(row.text, row.hashed);
});
