import assert from 'node:assert/strict';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SqliteDriver, sql } from 'kysely';
import { type BlogTestApp, buildBlogApp, DRIVERS, image, postForm, storageOf, storedImages } from '../../../test/blog-fixtures.js';
import { buildTestApp, CHANGE_LOG, json } from '../../../test/helpers.js';
import { dialectOf } from '../../db/database.js';
import type { DbHandle } from '../../db/schema.js';
import { newImageName } from '../../storage/image-storage.js';
import { SYSTEM_ACTOR } from '../history/change-log.js';
import { saveBlog } from './blog.service.js';
import { removeOrphanImages } from './image-cleanup.js';

const HOUR = 60 * 60 * 1000;

async function* bytesOf(text: string): AsyncGenerator<Uint8Array> {
  yield Buffer.from(text);
}

/**
 * What a crash leaves, beside what must stay: a blog showing an upload, an image only a page's HTML
 * embeds, an image committed for a record that never was, and an upload still staged.
 */
async function crashLeftovers(app: BlogTestApp) {
  const storage = storageOf(app);
  const saved = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Keeps its image' })],
    ['uploadPrimaryImage', { file: await image('jpeg'), filename: 'a.jpg' }],
  ]);
  assert.equal(saved.statusCode, 201, saved.body);
  const shown = json(saved).data[0].info_img.slice('/images/'.length) as string;
  const embedded = newImageName('image/png');
  await storage.commit(await storage.stage(bytesOf('embedded')), embedded);
  const page = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: app.site.headers,
    payload: { page_usertitle: 'Gallery', page_html_content: `<p><img src="/images/${embedded}" alt=""></p>` },
  });
  assert.equal(page.statusCode, 201, page.body);
  const orphan = newImageName('image/gif');
  await storage.commit(await storage.stage(bytesOf('committed, then the process died')), orphan);
  await storage.stage(bytesOf('staged, then the process died'));
  return { storage, kept: [shown, embedded].sort(), orphan };
}

/**
 * Until `work` waits for a lock the open transaction `trx` holds, or has settled. SQLite: the
 * transaction holds the one connection, and `work` asks for it (Kysely's driver queues it until
 * the transaction ends); `asked` is that request. PostgreSQL: its backend waits for a row lock.
 */
async function untilBlockedBy(db: DbHandle, trx: DbHandle, work: Promise<unknown>, asked: Promise<void>): Promise<void> {
  let settled = false;
  const end = () => {
    settled = true;
  };
  const done = work.then(end, end);
  if (dialectOf(db) !== 'postgres') {
    await Promise.race([asked, done]);
    return;
  }
  const holder = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!.pid;
  // PostgreSQL tells no one a backend waits: pg_stat_activity is polled, the attempts only bound a hang.
  for (let attempt = 0; !settled && attempt < 1000; attempt++, await sleep(10)) {
    const blocked = await sql`select 1 from pg_stat_activity where ${holder} = any(pg_blocking_pids(pid))`.execute(db);
    if (blocked.rows.length > 0) return;
  }
}

/** SQLite: resolves at the next request for the one connection, made once `armed()` says so. */
function connectionAsked(t: TestContext, armed: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const acquire = SqliteDriver.prototype.acquireConnection;
    t.mock.method(SqliteDriver.prototype, 'acquireConnection', function (this: SqliteDriver) {
      if (armed()) resolve();
      return acquire.call(this);
    });
  });
}

for (const driver of DRIVERS) {
  const config = { images: { storage: driver, cleanupGraceMs: HOUR } };

  test(`${driver}: the sweep removes staged uploads and images no record refers to, past the grace period only`, async (t) => {
    const app = await buildBlogApp(t, config);
    const { storage, kept, orphan } = await crashLeftovers(app);
    const all = { committed: [...kept, orphan].sort(), staged: 1 };

    assert.deepEqual(await removeOrphanImages(app.db.kysely, storage, HOUR), { staged: 0, unreferenced: 0 });
    assert.deepEqual(await storedImages(app), all, 'younger than the grace period: another node may be writing them');

    const later = Date.now() + 5_000;
    assert.deepEqual(await removeOrphanImages(app.db.kysely, storage, 0, later), { staged: 1, unreferenced: 1 });
    assert.deepEqual(await storedImages(app), { committed: kept, staged: 0 }, 'what a record shows, in a field or in HTML, stays');
    assert.deepEqual(await removeOrphanImages(app.db.kysely, storage, 0, later), { staged: 0, unreferenced: 0 });
  });

  test(`${driver}: an image a blog drops is kept when another write, not yet committed, refers to it`, async (t) => {
    const app = await buildBlogApp(t, config);
    const saved = await postForm(app, [
      ['data', JSON.stringify({ page: app.pageId, info_title: 'Drops its image' })],
      ['uploadPrimaryImage', { file: await image('jpeg'), filename: 'a.jpg' }],
    ]);
    assert.equal(saved.statusCode, 201, saved.body);
    const { info_id: dropping, info_img: path } = json(saved).data[0] as { info_id: number; info_img: string };
    const db = app.db.kysely;
    let drop: Promise<{ statusCode: number; body: string }> | undefined;
    const asked = connectionAsked(t, () => drop !== undefined);
    const referring = await db.transaction().execute(async (trx) => {
      const write = await saveBlog(
        { db: trx, changeLog: CHANGE_LOG, images: storageOf(app) },
        app.site.siteId,
        {
          page: app.pageId,
          info_title: 'Refers to it',
          info_img: path,
        },
        SYSTEM_ACTOR,
      );
      drop = app.app.inject({ method: 'POST', url: '/api/blog', headers: app.site.headers, payload: { id: dropping, info_img: '' } });
      // The drop must now wait for this transaction to end.
      await untilBlockedBy(db, trx, drop, asked);
      return write.record;
    });
    const dropped = await drop!;
    assert.equal(dropped.statusCode, 200, dropped.body);
    assert.deepEqual(referring.info_img_json, { width: 40, height: 30, bytes: referring.info_img_json?.bytes, type: 'image/jpeg' });
    const served = await app.app.inject({ method: 'GET', url: path });
    assert.equal(served.statusCode, 200, 'the image of the blog that refers to it is still served');
    assert.ok((await storedImages(app)).committed.includes(path.slice('/images/'.length)));
  });

  test(`${driver}: an app starting on the storage sweeps it`, async (t) => {
    const app = await buildBlogApp(t, config);
    const { kept } = await crashLeftovers(app);
    // Database timestamps have whole seconds: the next start's clock is two seconds on, so the
    // leftovers are older than its "now".
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() + 2_000 });
    await buildTestApp(t, {
      db: app.db,
      config: { dataDir: path.dirname(app.imagesDir), images: { storage: driver, cleanupGraceMs: 0 } },
    });
    assert.deepEqual(await storedImages(app), { committed: kept, staged: 0 });
  });
}
