import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { buildTestApp, CHANGE_LOG } from '../../../test/helpers.js';
import { parseArguments } from '../../cli/command.js';
import { COMMANDS } from '../../cli/commands.js';
import { testConfig } from '../../config.js';
import type { DbHandle } from '../../db/schema.js';
import { inTransaction } from '../../db/transaction.js';
import type { ActorRef } from '../history/change-log.js';
import { storeLogAndQueue } from '../shared/stored-writes.js';
import { findPageCycles, repairPageCycles } from './page.cycles.js';
import { PAGES, updatePage } from './page.repository.js';
import { getPage, pageTree, savePage } from './page.service.js';

const OWNER: ActorRef = { kind: 'console', userId: 1, email: 'owner@example.com' };
const DOCTOR: ActorRef = { kind: 'system', id: 'doctor', name: 'doctor' };

/** A move as a write made before moves were locked made it: no check of the tree, but a revision like any write. */
async function unlockedMove(db: DbHandle, siteId: number, id: number, parent: number): Promise<void> {
  await inTransaction(db, async (tx) => {
    await updatePage(tx, siteId, id, { page_parent: parent });
    await storeLogAndQueue(tx, CHANGE_LOG, PAGES, siteId, id, 'update', OWNER);
  });
}

/** A test's website, and a page maker on it. */
async function website(t: TestContext) {
  const a = await buildTestApp(t);
  const db = a.db.kysely;
  const siteId = a.site.siteId;
  const page = async (title: string, page_parent = 0) =>
    (await savePage(db, CHANGE_LOG, siteId, { page_usertitle: title, page_parent }, OWNER)).record.page;
  return { a, db, siteId, page };
}

test('a cycle left by unlocked moves is found and broken at its latest move: that page goes back to its parent before it', async (t) => {
  const { db, siteId, page } = await website(t);
  const home = await page('Home');
  const x = await page('X', home);
  const y = await page('Y');
  const z = await page('Z');
  // X under Y under Z, then Z under X: the last move closes the cycle.
  await unlockedMove(db, siteId, y, z);
  await unlockedMove(db, siteId, x, y);
  await unlockedMove(db, siteId, z, x);
  const unrelated = await page('Unrelated');
  await savePage(db, CHANGE_LOG, siteId, { id: unrelated, page_usertitle: 'Written after the cycle' }, OWNER);

  const [found] = await findPageCycles(db);
  assert.deepEqual(new Set(found!.cycle), new Set([x, y, z]));
  assert.equal(found!.siteId, siteId);

  const repairs = await repairPageCycles(db, CHANGE_LOG, DOCTOR);
  assert.equal(repairs.length, 1);
  assert.deepEqual({ ...repairs[0], cycle: undefined }, { siteId, cycle: undefined, page: z, parentWas: x, parentNow: 0 });
  assert.equal((await getPage(db, siteId, z)).page_parent, 0, 'Z goes back to the top level, where it was before its move');
  assert.equal((await getPage(db, siteId, x)).page_parent, y, 'the earlier moves stay');
  assert.deepEqual(await findPageCycles(db), []);
  const tree = await pageTree(db, siteId);
  const zNode = tree.find((n) => n.id === z)!;
  assert.deepEqual(
    zNode.children.map((n) => n.id),
    [y],
  );
  const [latest] = await db
    .selectFrom('content_changes')
    .select(['actor_name', 'op'])
    .where('record_id', '=', z)
    .where('type', '=', 'page')
    .orderBy('revision', 'desc')
    .execute();
  assert.deepEqual(latest, { actor_name: 'doctor', op: 'update' }, 'the repair is a revision like any write');
  assert.deepEqual(await repairPageCycles(db, CHANGE_LOG, DOCTOR), [], 'a second run finds nothing');
});

test('the page that closed a cycle goes back under its parent before the move when that parent still holds it; `cms doctor` reports it', async (t) => {
  const { a, db, siteId, page } = await website(t);
  const home = await page('Home');
  const first = await page('First', home);
  const second = await page('Second');
  // Crossed moves, as two nodes made them: first under second, then second (from under home) under first.
  await unlockedMove(db, siteId, second, home);
  await unlockedMove(db, siteId, first, second);
  await unlockedMove(db, siteId, second, first);

  const command = COMMANDS.find((c) => c.name === 'doctor')!;
  const { values, positionals } = parseArguments(command, []);
  const result = await command.run({
    json: false,
    values,
    positionals,
    config: () => testConfig({ dataDir: a.config.dataDir }),
    db: async () => a.db,
    changeLog: async () => CHANGE_LOG,
  });
  assert.equal(
    result!.text,
    `Site ${siteId}: page ${second} moved from under page ${first} to under page ${home}, breaking the cycle ${[second, first].join(' → ')}`,
  );
  assert.equal((await getPage(db, siteId, second)).page_parent, home);
  assert.equal((await getPage(db, siteId, first)).page_parent, second);
  const again = await command.run({
    json: false,
    values,
    positionals,
    config: () => testConfig({ dataDir: a.config.dataDir }),
    db: async () => a.db,
    changeLog: async () => CHANGE_LOG,
  });
  assert.equal(again!.text, 'No page tree has a cycle.');
});
