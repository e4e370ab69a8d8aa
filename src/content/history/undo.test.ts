import assert from 'node:assert/strict';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { buildTestApp, CHANGE_LOG } from '../../../test/helpers.js';
import { LocalImageStorage } from '../../storage/local-image-storage.js';
import { deletePage, getPage, savePage } from '../pages/page.service.js';
import type { ActorRef } from './change-log.js';
import { type UndoScope, undoChanges } from './undo.service.js';

const REST: ActorRef = { kind: 'oauth', connectionId: 'app-rest' };
const MCP: ActorRef = { kind: 'mcp', connectionId: 'app-mcp' };
const OWNER: ActorRef = { kind: 'console', userId: 1, email: 'owner@example.com' };
const CLI: ActorRef = { kind: 'cli', id: 'root', name: 'cms connection undo (root)' };

async function setUp(t: TestContext) {
  const a = await buildTestApp(t);
  const db = a.db.kysely;
  const siteId = a.site.siteId;
  const images = new LocalImageStorage(path.join(a.config.dataDir, 'images'));
  const page = async (title: string) =>
    (await savePage(db, CHANGE_LOG, siteId, { page_usertitle: title, page_summary: 'as the owner wrote it' }, OWNER)).record.page;
  const write = (id: number, page_summary: string, actor: ActorRef) => savePage(db, CHANGE_LOG, siteId, { id, page_summary }, actor);
  const summary = async (id: number) => (await getPage(db, siteId, id)).page_summary;
  const undo = (connectionIds: string[], actor: ActorRef) => {
    const scope: UndoScope = { siteId, connectionIds, since: '2000-01-01 00:00:00' };
    return undoChanges({ db, changeLog: CHANGE_LOG, images }, scope, actor);
  };
  return { a, db, page, write, summary, undo };
}

test("undo's rule: an application edits over REST, the CLI undoes it, it edits again over MCP, the console undoes the application: the page ends as the CLI left it", async (t) => {
  const { page, write, summary, undo } = await setUp(t);
  const id = await page('Page 1');
  await write(id, 'the app over REST', REST);
  const first = await undo(['app-rest'], CLI);
  assert.deepEqual(first.restored, [{ type: 'page', id }]);
  assert.equal(await summary(id), 'as the owner wrote it');
  await write(id, 'the app over MCP', MCP);

  const second = await undo(['app-rest', 'app-mcp'], OWNER);
  assert.deepEqual(second, { restored: [{ type: 'page', id }], deleted: [], unchanged: [], skipped: [] });
  assert.equal(await summary(id), 'as the owner wrote it', 'the MCP edit is taken back, to the CLI restore');
});

test('undo lists every record: undone, already as it was, or skipped with the other writer and the time', async (t) => {
  const { page, write, summary, undo, a } = await setUp(t);
  const undone = await page('Undone');
  const already = await page('Already');
  const contested = await page('Contested');
  await write(undone, 'the app', REST);
  await write(already, 'the app', REST);
  await write(already, 'as the owner wrote it', OWNER);
  await write(contested, 'the app', REST);
  await write(contested, 'the owner, after the app', OWNER);

  const result = await undo(['app-rest'], CLI);
  assert.deepEqual(result.restored, [{ type: 'page', id: undone }]);
  assert.deepEqual(result.unchanged, [{ type: 'page', id: already }], 'the owner put it back already');
  assert.equal(result.skipped.length, 1);
  const [skipped] = result.skipped;
  assert.equal(skipped!.id, contested);
  assert.deepEqual(skipped!.by, { kind: 'console', id: '1', name: 'owner@example.com' });
  assert.match(skipped!.at!, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  assert.match(skipped!.reason, new RegExp(`changed afterwards by owner@example.com \\(console\\) at ${skipped!.at} UTC`));
  assert.equal(await summary(contested), 'the owner, after the app', "the owner's later work stays");
  const revisions = await a.db.kysely.selectFrom('content_changes').select('revision').where('record_id', '=', already).execute();
  assert.equal(revisions.length, 3, 'a record already as it was is not written again');
});

test('undo deletes what the application created and brings back what it deleted, and says when there is nothing left to take back', async (t) => {
  const { db, a, page, undo } = await setUp(t);
  const made = (await savePage(db, CHANGE_LOG, a.site.siteId, { page_usertitle: 'Made by the app' }, REST)).record.page;
  const gone = await page('Deleted by the app');
  await deletePage(db, CHANGE_LOG, a.site.siteId, gone, REST);
  const madeAndDeleted = (await savePage(db, CHANGE_LOG, a.site.siteId, { page_usertitle: 'Short-lived' }, REST)).record.page;
  await deletePage(db, CHANGE_LOG, a.site.siteId, madeAndDeleted, REST);

  const result = await undo(['app-rest'], CLI);
  assert.deepEqual(result.deleted, [{ type: 'page', id: made }]);
  assert.deepEqual(result.restored, [{ type: 'page', id: gone }]);
  assert.deepEqual(result.unchanged, [{ type: 'page', id: madeAndDeleted }], 'made and deleted by the app: as it was without it');
  const again = await undo(['app-rest'], CLI);
  assert.equal(
    again.restored.length + again.deleted.length + again.skipped.length,
    0,
    'a second undo finds only records already as they were',
  );
});
