import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addTestSite, createTestDatabase } from '../../test/helpers.js';
import { SYSTEM_ACTOR } from '../content/history/change-log.js';
import { listPages, savePage } from '../content/pages/page.service.js';
import { inSnapshot, inTransaction } from './transaction.js';

test('service writes inside inTransaction join it: a failure later undoes them all', async (t) => {
  const db = await createTestDatabase(t);
  const { siteId } = await addTestSite(db);
  await assert.rejects(
    inTransaction(db.kysely, async (tx) => {
      const parent = await savePage(tx, siteId, { page_usertitle: 'Parent' }, SYSTEM_ACTOR);
      await savePage(tx, siteId, { page_usertitle: 'Child', page_parent: parent.record.page }, SYSTEM_ACTOR);
      throw new Error('stop');
    }),
    /stop/,
  );
  assert.equal((await listPages(db.kysely, siteId, { offset: 0, pageSize: 10 })).total, 0);

  const saved = await inTransaction(db.kysely, (tx) => savePage(tx, siteId, { page_usertitle: 'Kept' }, SYSTEM_ACTOR));
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
    await savePage(db.kysely, siteId, { page_usertitle: 'Committed between' }, SYSTEM_ACTOR);
    return [before, await count(snapshot)];
  });
  assert.equal(second, first, 'the second read sees the snapshot of the first');
  assert.equal(await count(db.kysely), first + 1, 'the commit is there afterwards');
});
