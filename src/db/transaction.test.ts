import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addTestSite, createTestDatabase } from '../../test/helpers.js';
import { SYSTEM_ACTOR } from '../content/history/change-log.js';
import { listPages, savePage } from '../content/pages/page.service.js';
import { inTransaction } from './transaction.js';

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
