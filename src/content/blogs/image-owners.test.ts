import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type BlogTestApp,
  buildBlogApp,
  DRIVERS,
  forgetHistory,
  image,
  postForm,
  storageOf,
  storedImages,
} from '../../../test/blog-fixtures.js';
import { json, type TestSite } from '../../../test/helpers.js';
import { removeOrphanImages } from './image-cleanup.js';

/** A blog of website A showing an uploaded primary image: its id, path and stored name. */
async function uploaded(app: BlogTestApp) {
  const saved = await postForm(app, [
    ['data', JSON.stringify({ page: app.pageId, info_title: 'Shows its upload' })],
    ['uploadPrimaryImage', { file: await image('jpeg'), filename: 'a.jpg' }],
  ]);
  assert.equal(saved.statusCode, 201, saved.body);
  const { info_id: id, info_img: path } = json(saved).data[0] as { info_id: number; info_img: string };
  return { id, path, name: path.slice('/images/'.length) };
}

/** Website B, with a page and a blog whose HTML embeds `path`: the blog's GET answer. */
async function embeddedBy(app: BlogTestApp, site: TestSite, path: string) {
  const page = await app.app.inject({ method: 'POST', url: '/api/page', headers: site.headers, payload: { page_usertitle: 'B' } });
  assert.equal(page.statusCode, 201, page.body);
  const blog = await app.app.inject({
    method: 'POST',
    url: '/api/blog',
    headers: site.headers,
    payload: { page: json(page).data[0].page, info_title: 'Borrows', info_fulltext: `<p><img src="${path}" alt=""></p>` },
  });
  assert.equal(blog.statusCode, 201, blog.body);
  const read = () => app.app.inject({ url: `/api/blog/${json(blog).data[0].info_id}`, headers: site.headers });
  return { read, before: await read() };
}

async function deleteBlog(app: BlogTestApp, id: number) {
  const deleted = await app.app.inject({ method: 'DELETE', url: `/api/blog/${id}`, headers: app.site.headers });
  assert.equal(deleted.statusCode, 204, deleted.body);
}

const owners = (app: BlogTestApp) => app.db.kysely.selectFrom('image_owners').selectAll().orderBy('name').execute();

for (const driver of DRIVERS) {
  const config = { images: { storage: driver, cleanupGraceMs: 60 * 60 * 1000 } };

  test(`${driver}: another website's record that embeds an image does not keep it once its own website stops showing it`, async (t) => {
    const app = await buildBlogApp(t, config);
    const a = await uploaded(app);
    assert.deepEqual(await owners(app), [{ name: a.name, site_id: app.site.siteId }], 'the upload records its website');
    const b = await embeddedBy(app, await app.addSite('B'), a.path);

    await deleteBlog(app, a.id);
    await forgetHistory(app);

    assert.equal((await app.app.inject({ url: a.path })).statusCode, 404, 'A got rid of its image');
    assert.deepEqual(await storedImages(app), { committed: [], staged: 0 }, 'nothing of it is left stored');
    assert.deepEqual(await owners(app), [], 'and so did its owner');
    const after = await b.read();
    assert.equal(after.statusCode, 200);
    assert.equal(after.body, b.before.body, 'B’s record is as B wrote it');
    assert.equal(after.headers.etag, b.before.headers.etag);
  });

  test(`${driver}: the sweep's first check, a blog's image rows, counts only the rows of the image's own website`, async (t) => {
    const app = await buildBlogApp(t, config);
    const a = await uploaded(app);
    const b = await app.addSite('B');
    const bPage = await app.app.inject({ method: 'POST', url: '/api/page', headers: b.headers, payload: { page_usertitle: 'B' } });
    const bBlog = await app.app.inject({
      method: 'POST',
      url: '/api/blog',
      headers: b.headers,
      payload: { page: json(bPage).data[0].page, info_title: 'Has a row for it' },
    });
    assert.equal(bBlog.statusCode, 201, bBlog.body);
    // Written outside the service: the service gives a website rows only for its own uploads.
    const [row] = await app.db.kysely.selectFrom('blog_images').selectAll().where('path', '=', a.path).execute();
    await app.db.kysely
      .insertInto('blog_images')
      .values({ ...row!, site_id: b.siteId, info_id: json(bBlog).data[0].info_id })
      .execute();

    await deleteBlog(app, a.id);
    await forgetHistory(app);

    assert.equal((await app.app.inject({ url: a.path })).statusCode, 404);
  });

  test(`${driver}: an image stays while another record of its own website shows it, whatever other websites do`, async (t) => {
    const app = await buildBlogApp(t, config);
    const a = await uploaded(app);
    await embeddedBy(app, await app.addSite('B'), a.path);
    const gallery = await app.app.inject({
      method: 'POST',
      url: '/api/page',
      headers: app.site.headers,
      payload: { page_usertitle: 'Gallery', page_html_content: `<p><img src="${a.path}" alt=""></p>` },
    });
    assert.equal(gallery.statusCode, 201, gallery.body);

    await deleteBlog(app, a.id);
    await forgetHistory(app);

    assert.equal((await app.app.inject({ url: a.path })).statusCode, 200, 'A’s page still shows it');
    assert.deepEqual(await owners(app), [{ name: a.name, site_id: app.site.siteId }]);
  });

  test(`${driver}: a deleted website's images go at the next sweep, whatever other websites show`, async (t) => {
    const app = await buildBlogApp(t, config);
    const a = await uploaded(app);
    const b = await embeddedBy(app, await app.addSite('B'), a.path);

    await app.db.kysely.deleteFrom('sites').where('id', '=', app.site.siteId).execute();
    await removeOrphanImages(app.db.kysely, storageOf(app), 0, Date.now() + 5_000);

    assert.equal((await app.app.inject({ url: a.path })).statusCode, 404);
    assert.deepEqual(await owners(app), []);
    assert.equal((await b.read()).body, b.before.body);
  });

  test(`${driver}: an image of no recorded website stays while a record of any website embeds it`, async (t) => {
    const app = await buildBlogApp(t, config);
    const a = await uploaded(app);
    // As an image stored before owners were recorded, that no blog_images row named then.
    await app.db.kysely.deleteFrom('image_owners').execute();
    await embeddedBy(app, await app.addSite('B'), a.path);

    await deleteBlog(app, a.id);
    await forgetHistory(app);

    assert.equal((await app.app.inject({ url: a.path })).statusCode, 200, 'B’s record keeps it, as before owners');
  });
}
