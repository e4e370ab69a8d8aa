/**
 * A client written against the hosted original's public API documentation (Website World,
 * formerly cms-tool.net), played end to end over HTTP: its credentials as headers, query
 * parameters and form fields; its JSON as a `data` form field and as a text/json body; its lists
 * with orderBy (and the examples' orderby), orderDirection=reverse, tag, menutext and allFields.
 * Nothing here uses what only this service offers.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createCredential } from '../src/accounts/account.service.js';
import { buildTestApp } from './helpers.js';

interface Answer {
  status: number;
  body: { data?: Array<Record<string, unknown>>; meta?: Record<string, unknown>; detail?: string };
}

test('a client of the hosted original works unchanged: credentials, bodies and lists as its docs describe them', async (t) => {
  const app = await buildTestApp(t);
  await app.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}/webapps/api`;
  const { apiId, apiKey } = app.site;
  const call = async (path: string, init: RequestInit = {}): Promise<Answer> => {
    const response = await fetch(`${base}${path}`, init);
    return { status: response.status, body: (await response.json()) as Answer['body'] };
  };
  const credentials = `apiID=${encodeURIComponent(apiId)}&apiKey=${encodeURIComponent(apiKey)}`;

  // "You can post your JSON payload inside a data request parameter": a urlencoded form, with the
  // credentials as two more POST parameters.
  const home = await call('/page', {
    method: 'POST',
    body: new URLSearchParams({ apiID: apiId, apiKey, data: JSON.stringify({ page_usertitle: 'Home', page_menuname: 'Home' }) }),
  });
  assert.equal(home.status, 201, home.body.detail);
  const homeId = home.body.data?.[0]?.page as number;

  // "… or set your header ContentType=text/json with the content body being your JSON data", with
  // the credentials as the request headers apiID and apiKey.
  for (const [title, menu] of [
    ['Über uns', 'About'],
    ['Contact', 'Contact us'],
    ['apple pie', 'Recipes'],
  ]) {
    const page = await call('/page', {
      method: 'POST',
      headers: { apiID: apiId, apiKey, 'Content-Type': 'text/json' },
      body: JSON.stringify({ page_usertitle: title, page_menuname: menu, page_parent: homeId, page_keywords: 'team, story' }),
    });
    assert.equal(page.status, 201, page.body.detail);
  }

  // A multipart form post with the credentials and the data among its fields (PHP's cURL with an array).
  const form = new FormData();
  form.append('apiID', apiId);
  form.append('apiKey', apiKey);
  form.append('data', JSON.stringify({ page: homeId, info_title: 'Opening day', info_fulltext: '<p>We open.</p>', info_tags: 'news' }));
  const blog = await call('/blog', { method: 'POST', body: form });
  assert.equal(blog.status, 201, blog.body.detail);

  // Reads with the credentials as GET parameters: the list examples' parameters.
  const byTitle = await call(`/page?${credentials}&orderBy=title`);
  assert.equal(byTitle.status, 200, byTitle.body.detail);
  assert.deepEqual(
    byTitle.body.data?.map((p) => p.page_usertitle),
    ['apple pie', 'Contact', 'Home', 'Über uns'],
    'titles in order whatever their case and accents',
  );
  const reversed = await call(`/page?${credentials}&orderby=title&orderDirection=reverse`);
  assert.deepEqual(
    reversed.body.data?.map((p) => p.page_usertitle),
    ['Über uns', 'Home', 'Contact', 'apple pie'],
  );
  const menu = await call(`/page?${credentials}&menutext=Contact%25`);
  assert.deepEqual(
    menu.body.data?.map((p) => p.page_menuname),
    ['Contact us'],
  );
  const tagged = await call(`/blog?${credentials}&tag=news`);
  assert.deepEqual(
    tagged.body.data?.map((b) => b.info_title),
    ['Opening day'],
  );
  const light = await call(`/blog?${credentials}&allFields=false`);
  assert.equal(light.body.data?.[0]?.info_title, 'Opening day');
  assert.equal(light.body.data?.[0]?.info_fulltext, undefined, 'allFields=false leaves the HTML out');
  const one = await call(`/page?${credentials}&id=${homeId}`);
  assert.equal(one.body.data?.length, 1);

  // The ERP integration found in public code: apiID: and apiKey: headers.
  const erp = await call('/page', { headers: { apiID: apiId, apiKey } });
  assert.equal(erp.status, 200);
  assert.equal(erp.body.meta?.total, 4);

  // "The API ID identifies … the default page for data creation": a blog without a page.
  const feed = await createCredential(app.db.kysely, app.site.siteId, 'feed', homeId);
  const defaulted = await call('/blog', {
    method: 'POST',
    headers: { apiID: feed.apiId, apiKey: feed.apiKey, 'Content-Type': 'text/json' },
    body: JSON.stringify({ info_title: 'Posted to the default page' }),
  });
  assert.equal(defaulted.status, 201, defaulted.body.detail);
  assert.equal(defaulted.body.data?.[0]?.page, homeId);
});
