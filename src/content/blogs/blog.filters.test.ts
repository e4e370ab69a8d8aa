import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type BlogTestApp, buildBlogApp } from '../../../test/blog-fixtures.js';
import { json } from '../../../test/helpers.js';
import { now } from '../../db/time.js';

type Blog = Record<string, unknown> & { info_id: number; info_title: string };

function day(offset: number): string {
  const d = new Date(`${now().slice(0, 10)}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + offset);
  return d.toISOString().slice(0, 10);
}

async function post(t: BlogTestApp, body: Record<string, unknown>): Promise<Blog> {
  const response = await t.app.inject({ method: 'POST', url: '/api/blog', headers: t.site.headers, payload: { page: t.pageId, ...body } });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0];
}

async function page(t: BlogTestApp, body: Record<string, unknown>): Promise<number> {
  const response = await t.app.inject({ method: 'POST', url: '/api/page', headers: t.site.headers, payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0].page;
}

async function titles(t: BlogTestApp, query: string): Promise<string[]> {
  const response = await t.app.inject({ url: `/api/blog?${query}`, headers: t.site.headers });
  assert.equal(response.statusCode, 200, `${query}: ${response.body}`);
  return json(response).data.map((b: Blog) => b.info_title);
}

async function seed(t: BlogTestApp) {
  const members = await page(t, { page_usertitle: 'Members', page_privacy: 1 });
  const membersNews = await page(t, { page_usertitle: 'Member news', page_parent: members });
  const news = await page(t, { page_usertitle: 'News' });
  const bread = await post(t, {
    info_title: 'Sourdough bread',
    info_date: day(-10),
    info_tags: 'baking, bread,Recipes',
    info_fulltext: '<h2>Starter</h2><p>Feed the <b>levain</b> daily</p>',
  });
  const cake = await post(t, {
    info_title: 'Carrot cake',
    info_date: day(-5),
    info_tags: 'baking,cake',
    info_summary: 'A moist cake with walnuts',
  });
  const hidden = await post(t, { info_title: 'Hidden draft', info_show: 'N', info_date: day(-3), info_tags: 'draft' });
  const embargo = await post(t, { info_title: 'Embargoed launch', info_hideuntil: day(1), info_date: day(-2) });
  const released = await post(t, { info_title: 'Released launch', info_hideuntil: day(0), info_date: day(-2) });
  const future = await post(t, { info_title: 'Future post', info_date: day(3) });
  const pinned = await post(t, { info_title: 'Pinned 100% rye', info_order: 1, info_date: day(-30), info_metatitle: 'Rye guide' });
  const privatePost = await post(t, { page: membersNews, info_title: 'Members only', info_date: day(-1) });
  const newsPost = await post(t, { page: news, info_title: 'Shop_news', info_date: day(-1), info_filename: 'shop_news' });
  return { members, membersNews, news, bread, cake, hidden, embargo, released, future, pinned, privatePost, newsPost };
}

test('blog list order: info_order, then info_date newest first, then info_id', async (t) => {
  const app = await buildBlogApp(t);
  await seed(app);
  assert.deepEqual(await titles(app, ''), [
    'Future post',
    'Members only',
    'Shop_news',
    'Embargoed launch',
    'Released launch',
    'Hidden draft',
    'Carrot cake',
    'Sourdough bread',
    'Pinned 100% rye',
  ]);
});

test('blog filters: id, page, title, filename, tags, matchType, keywords, offset and pageSize', async (t) => {
  const app = await buildBlogApp(t);
  const s = await seed(app);
  assert.deepEqual(await titles(app, `id=${s.cake.info_id}`), ['Carrot cake']);
  assert.deepEqual(await titles(app, `page=${s.news}`), ['Shop_news']);
  assert.deepEqual(await titles(app, `page=${s.news}&id=${s.cake.info_id}`), [], 'filters combine');

  // Text filters: the whole value without wildcards, case-insensitive; % and _ are wildcards.
  assert.deepEqual(await titles(app, 'title=carrot cake'), ['Carrot cake']);
  assert.deepEqual(await titles(app, 'title=carrot'), []);
  assert.deepEqual(await titles(app, 'title=%25launch'), ['Embargoed launch', 'Released launch']);
  assert.deepEqual(await titles(app, 'title=c_rrot cake'), ['Carrot cake']);
  assert.deepEqual(await titles(app, 'title=%25100%5C%25%25'), ['Pinned 100% rye'], 'an escaped % is literal');
  assert.deepEqual(await titles(app, 'title=100%25&matchType=contains'), ['Pinned 100% rye']);
  assert.deepEqual(await titles(app, 'title=carrot&matchType=startsWith'), ['Carrot cake']);
  assert.deepEqual(await titles(app, 'title=LAUNCH&matchType=endsWith'), ['Embargoed launch', 'Released launch']);
  assert.deepEqual(await titles(app, 'title=Carrot%20cake&matchType=exact'), ['Carrot cake']);
  assert.deepEqual(await titles(app, 'title=Carrot%25&matchType=exact'), [], 'exact takes % literally');
  assert.deepEqual(await titles(app, 'filename=sourdough-bread'), ['Sourdough bread']);
  assert.deepEqual(await titles(app, 'filename=shop_news&matchType=exact'), ['Shop_news']);
  assert.deepEqual(await titles(app, 'filename=carrot%25'), ['Carrot cake']);

  // tags: any one of the comma-separated tags, spaces around commas ignored.
  assert.deepEqual(await titles(app, 'tags=baking'), ['Carrot cake', 'Sourdough bread']);
  assert.deepEqual(await titles(app, 'tags=bread'), ['Sourdough bread']);
  assert.deepEqual(await titles(app, 'tags=recipes'), ['Sourdough bread']);
  assert.deepEqual(await titles(app, 'tags=bak'), [], 'a tag matches whole');
  assert.deepEqual(await titles(app, 'tags=bak&matchType=startsWith'), ['Carrot cake', 'Sourdough bread']);
  assert.deepEqual(await titles(app, 'tags=c%25'), ['Carrot cake']);

  // keywords: full text over title, summary, tags, SEO title and the text of the HTML.
  assert.deepEqual(await titles(app, 'keywords=levain'), ['Sourdough bread'], 'HTML text');
  assert.deepEqual(await titles(app, 'keywords=starter levain'), ['Sourdough bread'], 'every word must occur');
  assert.deepEqual(await titles(app, 'keywords=starter cake'), []);
  assert.deepEqual(await titles(app, 'keywords=walnuts'), ['Carrot cake'], 'summary');
  assert.deepEqual(await titles(app, 'keywords=recipes'), ['Sourdough bread'], 'tags');
  assert.deepEqual(await titles(app, 'keywords=guide'), ['Pinned 100% rye'], 'SEO title');
  assert.deepEqual(await titles(app, 'keywords=CARROT'), ['Carrot cake'], 'case-insensitive');
  assert.deepEqual(await titles(app, 'keywords=h2'), [], 'tags of the HTML are not text');
  assert.deepEqual(await titles(app, 'keywords=%22%27'), [], 'no words: nothing');
  await app.app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: app.site.headers,
    payload: { id: s.cake.info_id, info_summary: 'With pecans' },
  });
  assert.deepEqual(await titles(app, 'keywords=walnuts'), [], 'the index follows updates');
  assert.deepEqual(await titles(app, 'keywords=pecans'), ['Carrot cake']);

  const paged = json(await app.app.inject({ url: '/api/blog?offset=2&pageSize=3', headers: app.site.headers }));
  assert.deepEqual(
    paged.data.map((b: Blog) => b.info_title),
    ['Shop_news', 'Embargoed launch', 'Released launch'],
  );
  assert.deepEqual(paged.meta, { total: 9, offset: 2, pageSize: 3 });
  for (const size of ['0', '1000', 'abc', '-5']) {
    const meta = json(await app.app.inject({ url: `/api/blog?pageSize=${size}`, headers: app.site.headers })).meta;
    assert.equal(meta.pageSize, 200, `pageSize=${size}`);
  }
  assert.equal((await app.app.inject({ url: '/api/blog?offset=-1', headers: app.site.headers })).statusCode, 400);
  assert.equal((await app.app.inject({ url: '/api/blog?matchType=regex', headers: app.site.headers })).statusCode, 400);
  assert.equal((await app.app.inject({ url: '/api/blog?parent=1', headers: app.site.headers })).statusCode, 400, 'unknown filter');
});

test('publicContentOnly keeps visible, released, not future-dated blogs on public pages', async (t) => {
  const app = await buildBlogApp(t);
  await seed(app);
  const expected = ['Shop_news', 'Released launch', 'Carrot cake', 'Sourdough bread', 'Pinned 100% rye'];
  assert.deepEqual(await titles(app, 'publicContentOnly=true'), expected);
  assert.deepEqual(await titles(app, 'publicContentOnly=1'), expected);
  assert.equal((await titles(app, 'publicContentOnly=0')).length, 9);
  assert.equal((await titles(app, 'publicContentOnly=false')).length, 9);
  assert.equal((await app.app.inject({ url: '/api/blog?publicContentOnly=yes', headers: app.site.headers })).statusCode, 400);
  assert.deepEqual(await titles(app, 'publicContentOnly=true&tags=baking'), ['Carrot cake', 'Sourdough bread']);
  const meta = json(await app.app.inject({ url: '/api/blog?publicContentOnly=1&pageSize=2', headers: app.site.headers })).meta;
  assert.equal(meta.total, 5, 'the total counts the same rows');
});

test('another website sees none of these blogs through any filter', async (t) => {
  const app = await buildBlogApp(t);
  await seed(app);
  const other = await app.addSite('B');
  for (const query of ['', 'keywords=levain', 'tags=baking', 'publicContentOnly=1', 'title=%25']) {
    const response = await app.app.inject({ url: `/api/blog?${query}`, headers: other.headers });
    assert.deepEqual(json(response).data, [], query);
  }
});
