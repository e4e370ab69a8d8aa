import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { buildBlogApp, forgetHistory, image, postForm } from '../../../test/blog-fixtures.js';
import { buildTestApp, CHANGE_LOG, json, type TestApp } from '../../../test/helpers.js';
import { connect, startOAuthApp } from '../../../test/oauth.helpers.js';
import { listConnections } from '../../oauth/connections/connection.service.js';
import { LocalImageStorage } from '../../storage/local-image-storage.js';
import { SYSTEM_ACTOR } from './change-log.js';
import { pruneHistory } from './retention.service.js';
import { undoChanges } from './undo.service.js';

type Headers = Record<string, string>;

async function send(
  app: TestApp,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  payload?: object,
  headers: Headers = app.site.headers,
) {
  return app.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
}

async function created(app: TestApp, url: string, payload: object, headers?: Headers) {
  const response = await send(app, 'POST', url, payload, headers);
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

test('every write keeps a revision, with its actor; a revision reads as the record was, and restoring one is a new revision', async (t) => {
  const app = await buildTestApp(t);
  const page = await created(app, '/api/page', { page_usertitle: 'First words' });
  const edited = await send(app, 'PATCH', `/api/page/${page.page}`, { page_usertitle: 'Second words' });
  assert.equal(edited.statusCode, 200, edited.body);

  const revisions = json(await send(app, 'GET', `/api/page/${page.page}/revisions`)).data;
  assert.deepEqual(
    revisions.map((r: { revision: number; op: string }) => [r.revision, r.op]),
    [
      [2, 'update'],
      [1, 'create'],
    ],
    'newest first',
  );
  assert.deepEqual(revisions[0].actor, { kind: 'api-key', id: app.site.apiId, name: 'test' }, "the API credential's id and label");
  assert.match(revisions[0].at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);

  const first = json(await send(app, 'GET', `/api/page/${page.page}/revisions/1`));
  assert.deepEqual(first, { data: [page] }, 'the record exactly as the API returned it then');
  const missing = await send(app, 'GET', `/api/page/${page.page}/revisions/3`);
  assert.equal(missing.statusCode, 404);
  assert.equal(
    json(missing).detail,
    `The page ${page.page} of this website has no revision 3: GET /api/page/${page.page}/revisions lists those it has.`,
  );

  // If-Match is honoured: a stale ETag restores nothing.
  const stale = await send(app, 'POST', `/api/page/${page.page}/revisions/1/restore`, undefined, {
    ...app.site.headers,
    'if-match': '"stale"',
  });
  assert.equal(stale.statusCode, 412, stale.body);
  const current = await send(app, 'GET', `/api/page/${page.page}`);
  const restored = await send(app, 'POST', `/api/page/${page.page}/revisions/1/restore`, undefined, {
    ...app.site.headers,
    'if-match': String(current.headers.etag),
  });
  assert.equal(restored.statusCode, 200, restored.body);
  assert.equal(json(restored).data[0].page_usertitle, 'First words');
  assert.equal(json(await send(app, 'GET', `/api/page/${page.page}`)).data[0].page_usertitle, 'First words');
  assert.equal(restored.headers.etag, (await send(app, 'GET', `/api/page/${page.page}`)).headers.etag);

  const feed = json(await send(app, 'GET', `/api/changes?type=page&id=${page.page}`)).data;
  assert.deepEqual(
    feed.map((c: { op: string; revision: number }) => [c.op, c.revision]),
    [
      ['create', 1],
      ['update', 2],
      ['restore', 3],
    ],
  );
});

test('a deleted page or blog keeps its revisions under its id and comes back; a missing parent or page is a 409 that names it', async (t) => {
  const app = await buildTestApp(t);
  const parent = await created(app, '/api/page', { page_usertitle: 'Parent' });
  const child = await created(app, '/api/page', { page_usertitle: 'Child', page_parent: parent.page });
  const blog = await created(app, '/api/blog', { page: child.page, info_title: 'On the child' });

  assert.equal((await send(app, 'DELETE', `/api/blog/${blog.info_id}`)).statusCode, 204);
  assert.equal((await send(app, 'DELETE', `/api/page/${child.page}`)).statusCode, 204);
  assert.equal((await send(app, 'DELETE', `/api/page/${parent.page}`)).statusCode, 204);

  const revisions = json(await send(app, 'GET', `/api/page/${child.page}/revisions`)).data;
  assert.deepEqual(
    revisions.map((r: { op: string }) => r.op),
    ['delete', 'create'],
  );
  assert.deepEqual(
    json(await send(app, 'GET', `/api/page/${child.page}/revisions/2`)).data[0],
    child,
    'a delete keeps the record as it was',
  );

  const orphan = await send(app, 'POST', `/api/page/${child.page}/revisions/1/restore`);
  assert.equal(orphan.statusCode, 409, orphan.body);
  assert.match(json(orphan).detail, new RegExp(`parent, page ${parent.page},`));
  const blogOrphan = await send(app, 'POST', `/api/blog/${blog.info_id}/revisions/1/restore`);
  assert.equal(blogOrphan.statusCode, 409, blogOrphan.body);
  assert.match(json(blogOrphan).detail, new RegExp(`page ${child.page}`));

  for (const [url, id] of [
    [`/api/page/${parent.page}/revisions/1/restore`, parent.page],
    [`/api/page/${child.page}/revisions/1/restore`, child.page],
    [`/api/blog/${blog.info_id}/revisions/1/restore`, blog.info_id],
  ] as const) {
    const back = await send(app, 'POST', url);
    assert.equal(back.statusCode, 201, back.body);
    assert.equal(json(back).data[0].id, id, 'under the same id');
  }
  assert.deepEqual(json(await send(app, 'GET', `/api/blog/${blog.info_id}`)).data[0].info_title, 'On the child');
  assert.equal(json(await send(app, 'GET', `/api/page/${child.page}`)).data[0].page_parent, parent.page);
  const ops = json(await send(app, 'GET', `/api/changes?type=blog&id=${blog.info_id}`)).data.map((c: { op: string }) => c.op);
  assert.deepEqual(ops, ['create', 'delete', 'restore']);
});

test("another website's records, revisions and changes are not there", async (t) => {
  const app = await buildTestApp(t);
  const page = await created(app, '/api/page', { page_usertitle: 'Mine' });
  const other = await app.addSite('Other');
  assert.equal((await send(app, 'GET', `/api/page/${page.page}/revisions`, undefined, other.headers)).statusCode, 404);
  assert.equal((await send(app, 'GET', `/api/page/${page.page}/revisions/1`, undefined, other.headers)).statusCode, 404);
  assert.equal((await send(app, 'POST', `/api/page/${page.page}/revisions/1/restore`, undefined, other.headers)).statusCode, 404);
  assert.deepEqual(json(await send(app, 'GET', '/api/changes', undefined, other.headers)).data, []);
  assert.equal(json(await send(app, 'GET', '/api/changes')).data.length, 1);
});

test('an image a kept revision shows is not removed, so restoring the revision shows it again', async (t) => {
  const app = await buildBlogApp(t);
  const posted = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'With a picture' })],
    ['uploadPrimaryImage', { file: await image('jpeg', 40, 30), filename: 'a.jpg' }],
  ]);
  assert.equal(posted.statusCode, 201, posted.body);
  const blog = json(posted).data[0];
  const cleared = await send(app, 'PATCH', `/api/blog/${blog.info_id}`, { info_img: '' });
  assert.equal(json(cleared).data[0].info_img, '');
  assert.equal((await app.app.inject({ url: blog.info_img })).statusCode, 200, 'still stored: revision 1 shows it');
  const restored = await send(app, 'POST', `/api/blog/${blog.info_id}/revisions/1/restore`);
  assert.equal(restored.statusCode, 200, restored.body);
  assert.equal(json(restored).data[0].info_img, blog.info_img);
  assert.deepEqual(json(restored).data[0].info_img_json, blog.info_img_json);
  await forgetHistory(app);
  assert.equal((await app.app.inject({ url: blog.info_img })).statusCode, 200, 'the latest revision, the current one, shows it');
});

test('retention keeps each existing record’s latest revision and forgets deleted records; an older cursor is then a 410', async (t) => {
  const app = await buildTestApp(t);
  const kept = await created(app, '/api/page', { page_usertitle: 'Kept' });
  await send(app, 'PATCH', `/api/page/${kept.page}`, { page_usertitle: 'Kept, edited' });
  const gone = await created(app, '/api/page', { page_usertitle: 'Gone' });
  await send(app, 'DELETE', `/api/page/${gone.page}`);
  const start = json(await send(app, 'GET', '/api/changes')).meta.nextCursor;
  const firstCursor = json(await send(app, 'GET', '/api/changes?pageSize=1')).meta.nextCursor;

  // Nothing is old yet.
  assert.equal(await pruneHistory(app.db.kysely, 90), 0);
  assert.equal(await pruneHistory(app.db.kysely, 0, new Date(Date.now() + 2000)), 3);
  assert.equal(await pruneHistory(app.db.kysely, 0, new Date(Date.now() + 2000)), 0, 'a second run removes nothing more');
  assert.deepEqual(
    json(await send(app, 'GET', `/api/page/${kept.page}/revisions`)).data.map((r: { revision: number }) => r.revision),
    [2],
  );
  assert.equal((await send(app, 'GET', `/api/page/${gone.page}/revisions`)).statusCode, 404);

  const expired = await send(app, 'GET', `/api/changes?since=${firstCursor}`);
  assert.equal(expired.statusCode, 410, expired.body);
  assert.equal(json(expired).type, '/problems/cursor-expired');
  const fresh = json(await send(app, 'GET', '/api/changes'));
  assert.deepEqual(fresh.data, [], 'the kept revision is older than the feed now starts');
  assert.equal(fresh.meta.nextCursor, start, 'the cursor at the end still works');
  assert.equal((await send(app, 'GET', `/api/changes?since=${start}`)).statusCode, 200);
});

test('an OAuth connection is named as the actor, and undo takes back what it did since a time, leaving what others changed after it', async (t) => {
  const a = await startOAuthApp(t);
  const { tokens } = await connect(a, { scope: 'everything:write' });
  const bearer = { authorization: `Bearer ${tokens.access_token}` };
  const key = a.site.headers;
  const [connection] = await listConnections(a.db.kysely, a.site.siteId);
  assert.ok(connection);

  // Before the window: the owner's own pages.
  const edited = await created(a, '/api/page', { page_usertitle: 'Edited by the app' }, key);
  const removed = await created(a, '/api/page', { page_usertitle: 'Deleted by the app' }, key);
  const contested = await created(a, '/api/page', { page_usertitle: 'Edited by both' }, key);
  const since = json(await send(a, 'GET', `/api/page/${contested.page}/revisions`, undefined, key)).data[0].at;

  // The application's changes.
  const made = await created(a, '/api/page', { page_usertitle: 'Made by the app' }, bearer);
  const madeBlog = await created(a, '/api/blog', { page: made.page, info_title: 'Blog by the app' }, bearer);
  await send(a, 'PATCH', `/api/page/${edited.page}`, { page_usertitle: 'Rewritten by the app' }, bearer);
  await send(a, 'PATCH', `/api/page/${edited.page}`, { page_summary: 'and again' }, bearer);
  assert.equal((await send(a, 'DELETE', `/api/page/${removed.page}`, undefined, bearer)).statusCode, 204);
  await send(a, 'PATCH', `/api/page/${contested.page}`, { page_usertitle: 'The app was here' }, bearer);
  // Someone else after it.
  await send(a, 'PATCH', `/api/page/${contested.page}`, { page_summary: 'The owner fixed it' }, key);

  const change = json(await send(a, 'GET', `/api/changes?type=page&id=${made.page}`, undefined, key)).data[0];
  assert.deepEqual(change.actor, { kind: 'oauth', id: connection.id, name: 'Test app' });

  const images = new LocalImageStorage(path.join(a.config.dataDir, 'images'));
  const scope = { siteId: a.site.siteId, connectionIds: [connection.id], since };
  const result = await undoChanges({ db: a.db.kysely, changeLog: CHANGE_LOG, images }, scope, SYSTEM_ACTOR);
  const ids = (list: readonly { type: string; id: number }[]) => list.map((r) => `${r.type} ${r.id}`).sort();
  assert.deepEqual(ids(result.deleted), [`blog ${madeBlog.info_id}`, `page ${made.page}`].sort(), 'what it created is deleted');
  assert.deepEqual(ids(result.restored), [`page ${edited.page}`, `page ${removed.page}`].sort(), 'what it changed or deleted comes back');
  assert.deepEqual(
    result.skipped.map((s) => `${s.type} ${s.id}`),
    [`page ${contested.page}`],
  );
  assert.match(result.skipped[0]!.reason, /changed afterwards by test/);

  assert.equal((await send(a, 'GET', `/api/page/${made.page}`, undefined, key)).statusCode, 404);
  assert.equal(json(await send(a, 'GET', `/api/page/${edited.page}`, undefined, key)).data[0].page_usertitle, 'Edited by the app');
  assert.equal(json(await send(a, 'GET', `/api/page/${edited.page}`, undefined, key)).data[0].page_summary, '');
  assert.equal(json(await send(a, 'GET', `/api/page/${removed.page}`, undefined, key)).data[0].page_usertitle, 'Deleted by the app');
  assert.equal(json(await send(a, 'GET', `/api/page/${contested.page}`, undefined, key)).data[0].page_summary, 'The owner fixed it');
});
