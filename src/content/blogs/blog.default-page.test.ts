import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, json } from '../../../test/helpers.js';
import { createCredential } from '../../accounts/account.service.js';

test("a blog posted without page goes to the credential's default page; without one it is a 400", async (t) => {
  const app = await buildTestApp(t);
  const created = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: app.site.headers,
    payload: { page_usertitle: 'News' },
  });
  const news = json(created).data[0].page as number;
  const withDefault = await createCredential(app.db.kysely, app.site.siteId, 'newsroom', news);
  assert.equal(withDefault.defaultPage, news);
  const headers = { apiID: withDefault.apiId, apiKey: withDefault.apiKey };

  const posted = await app.app.inject({ method: 'POST', url: '/api/blog', headers, payload: { info_title: 'No page named' } });
  assert.equal(posted.statusCode, 201, posted.body);
  assert.equal(json(posted).data[0].page, news);
  const named = await app.app.inject({ method: 'POST', url: '/api/blog', headers, payload: { info_title: 'Named', page: news } });
  assert.equal(json(named).data[0].page, news, 'a page sent is used as sent');

  const without = await app.app.inject({ method: 'POST', url: '/api/blog', headers: app.site.headers, payload: { info_title: 'Nowhere' } });
  assert.equal(without.statusCode, 400);
  assert.equal(json(without).errors[0].field, 'page');
  assert.match(json(without).errors[0].message, /default page/);

  // A page of another website cannot be a default page.
  const other = await app.addSite('Other');
  const foreign = await app.app.inject({ method: 'POST', url: '/api/page', headers: other.headers, payload: { page_usertitle: 'Theirs' } });
  await assert.rejects(createCredential(app.db.kysely, app.site.siteId, 'wrong', json(foreign).data[0].page), /has no page/);

  // A default page deleted later: the blog is refused, naming it.
  const doomed = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: app.site.headers,
    payload: { page_usertitle: 'Doomed' },
  });
  const doomedId = json(doomed).data[0].page as number;
  const stale = await createCredential(app.db.kysely, app.site.siteId, 'stale', doomedId);
  assert.equal((await app.app.inject({ method: 'DELETE', url: `/api/page/${doomedId}`, headers: app.site.headers })).statusCode, 204);
  const refused = await app.app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: { apiID: stale.apiId, apiKey: stale.apiKey },
    payload: { info_title: 'Too late' },
  });
  assert.equal(refused.statusCode, 400);
  assert.match(json(refused).errors[0].message, new RegExp(`default page ${doomedId} no longer exists`));
});

test('empty records are refused: a page needs a title or menu text, a blog a title', async (t) => {
  const app = await buildTestApp(t);
  const empty = await app.app.inject({ method: 'POST', url: '/api/page', headers: app.site.headers, payload: {} });
  assert.equal(empty.statusCode, 400);
  assert.equal(json(empty).errors[0].field, 'page_usertitle');
  assert.match(json(empty).errors[0].message, /page_menuname/);
  const blank = await app.app.inject({ method: 'POST', url: '/api/page', headers: app.site.headers, payload: { page_usertitle: '  ' } });
  assert.equal(blank.statusCode, 400);
  const byMenu = await app.app.inject({ method: 'POST', url: '/api/page', headers: app.site.headers, payload: { page_menuname: 'Shop' } });
  assert.equal(byMenu.statusCode, 201);
  const page = json(byMenu).data[0].page as number;
  const untitled = await app.app.inject({ method: 'POST', url: '/api/blog', headers: app.site.headers, payload: { page } });
  assert.equal(untitled.statusCode, 400);
  assert.equal(json(untitled).errors[0].field, 'info_title');
  assert.equal((await app.db.kysely.selectFrom('blogs').select('info_id').execute()).length, 0, 'nothing stored');
  // An update may leave the title as it is.
  const blog = await app.app.inject({ method: 'POST', url: '/api/blog', headers: app.site.headers, payload: { page, info_title: 'T' } });
  const id = json(blog).data[0].info_id as number;
  const updated = await app.app.inject({ method: 'POST', url: '/api/blog', headers: app.site.headers, payload: { id, info_show: 'N' } });
  assert.equal(updated.statusCode, 200);
});
