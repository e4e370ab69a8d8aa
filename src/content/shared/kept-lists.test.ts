import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, json, secondHandle, type TestApp } from '../../../test/helpers.js';
import { KeptLists } from './kept-lists.js';

test('a kept list is used at the version it was read at only; the one used least recently goes first', () => {
  const kept = new KeptLists(2);
  kept.set('a', '5/1', { ids: [1, 2], rest: { total: 2 } });
  assert.deepEqual(kept.get('a', '5/1'), { ids: [1, 2], rest: { total: 2 }, version: '5/1' });
  assert.equal(kept.get('a', '6/1'), undefined, 'the website changed since');
  assert.equal(kept.get('a', '5/1'), undefined, 'and a list found out of date is dropped');
  kept.set('a', '6/1', { ids: [1], rest: { total: 1 } });
  kept.set('b', '6/1', { ids: [2], rest: { total: 1 } });
  assert.ok(kept.get('a', '6/1'), 'used: b is now the least recent');
  kept.set('c', '6/1', { ids: [3], rest: { total: 1 } });
  assert.equal(kept.size, 2);
  assert.equal(kept.get('b', '6/1'), undefined);
  assert.ok(kept.get('a', '6/1'));
  assert.ok(kept.get('c', '6/1'));
  kept.clear();
  assert.equal(kept.get('c', '6/1'), undefined);
});

test('kept lists hold a bounded number of ids together: the ones used least recently go first', () => {
  const kept = new KeptLists(500, 10);
  kept.set('a', '1/1', { ids: [1, 2, 3, 4], rest: 'all' });
  kept.set('b', '1/1', { ids: [5, 6, 7, 8], rest: 'all' });
  assert.ok(kept.get('a', '1/1'), 'used: b is now the least recent');
  kept.set('c', '1/1', { ids: [9, 10, 11], rest: 'all' });
  assert.equal(kept.ids, 7);
  assert.equal(kept.get('b', '1/1'), undefined);
  assert.equal(kept.get('a', '2/1'), undefined, 'out of date: dropped, and its ids with it');
  assert.equal(kept.ids, 3);
  kept.set('c', '1/1', { ids: Array.from({ length: 11 }, (_, i) => i), rest: 'all' });
  assert.deepEqual([kept.size, kept.ids], [0, 0], 'more than all may hold is not kept');
});

const GARDEN = '/api/page?title=garden&matchType=contains&pageSize=100';

async function listed(node: TestApp, headers: Record<string, string>, url = GARDEN) {
  const response = await node.app.inject({ url, headers });
  assert.equal(response.statusCode, 200, response.body);
  const body = json(response);
  return { total: body.meta.total as number, titles: (body.data as { page_usertitle: string }[]).map((p) => p.page_usertitle) };
}

async function create(node: TestApp, headers: Record<string, string>, page_usertitle: string): Promise<number> {
  const response = await node.app.inject({ method: 'POST', url: '/api/page', headers, payload: { page_usertitle } });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0].page;
}

test('two nodes on one database: a filtered list is kept until any node writes to its website', async (t) => {
  const { first, second } = await secondHandle(t);
  const a = await buildTestApp(t, { db: first });
  const b = await buildTestApp(t, { db: second });
  // Both nodes serve A's website, with its credentials.
  const headers = a.site.headers;
  const rose = await create(b, headers, 'Rose garden');
  await create(b, headers, 'Herb garden');
  await create(b, headers, 'Kitchen');
  assert.deepEqual(await listed(a, headers), { total: 2, titles: ['Rose garden', 'Herb garden'] });

  // Kept: a change made beside the service takes no change number, and the list is not read
  // again (read afresh, it would find one match).
  await sql`update pages set page_usertitle = 'Rose bed', page_menuname = 'Rose bed' where page = ${rose}`.execute(first.kysely);
  assert.deepEqual(await listed(a, headers), { total: 2, titles: ['Rose garden', 'Herb garden'] });

  // A write through the other node takes the website's next change number: read afresh.
  await create(b, headers, 'Garden shed');
  assert.deepEqual(await listed(a, headers), { total: 2, titles: ['Herb garden', 'Garden shed'] });

  // Another website's write leaves this website's list as kept: another change number.
  const other = await a.addSite('Other');
  await create(b, other.headers, 'Other garden');
  assert.deepEqual(await listed(a, headers), { total: 2, titles: ['Herb garden', 'Garden shed'] });
  assert.deepEqual(await listed(a, other.headers), { total: 1, titles: ['Other garden'] });

  // A record of the kept window deleted beside the service: read afresh, not shown with a gap.
  await listed(a, headers);
  await sql`delete from pages where page_usertitle = 'Herb garden'`.execute(first.kysely);
  assert.deepEqual(await listed(a, headers), { total: 1, titles: ['Garden shed'] });

  // A cursor page is kept the same way, with its next cursor.
  const firstPage = async () => {
    const response = await a.app.inject({ url: '/api/page?title=garden&matchType=contains&pageSize=1&cursor=', headers });
    assert.equal(response.statusCode, 200, response.body);
    const body = json(response);
    return { titles: body.data.map((p: { page_usertitle: string }) => p.page_usertitle), last: body.meta.nextCursor === null };
  };
  await create(b, headers, 'Garden path');
  assert.deepEqual(await firstPage(), { titles: ['Garden shed'], last: false });
  await sql`update pages set page_usertitle = 'Shed', page_menuname = 'Shed' where page_usertitle = 'Garden shed'`.execute(first.kysely);
  assert.deepEqual(await firstPage(), { titles: ['Garden shed'], last: false }, 'kept: read afresh, it would start at the path');
  await create(b, headers, 'Garden bench');
  assert.deepEqual(await firstPage(), { titles: ['Garden path'], last: false });
});

test('the next window of a filter is a slice of its matches, kept until any node writes to its website', async (t) => {
  const { first, second } = await secondHandle(t);
  const a = await buildTestApp(t, { db: first });
  const b = await buildTestApp(t, { db: second });
  const headers = a.site.headers;
  await create(b, headers, 'Rose garden');
  await create(b, headers, 'Herb garden');
  const kitchen = await create(b, headers, 'Kitchen');
  const shed = await create(b, headers, 'Shed');
  const window = (offset: number, order = '') =>
    listed(a, headers, `${GARDEN.replace('pageSize=100', 'pageSize=1')}&offset=${offset}${order}`);
  const renamed = (page: number, title: string) =>
    sql`update pages set page_usertitle = ${title}, page_menuname = ${title} where page = ${page}`.execute(first.kysely);
  assert.deepEqual(await window(0), { total: 2, titles: ['Rose garden'] });

  // Matches made beside the service, which take no change number. The next window of the filter
  // reads its matches, and keeps them.
  await renamed(kitchen, 'Kitchen garden');
  assert.deepEqual(await window(1), { total: 3, titles: ['Herb garden'] });
  // The window after is a slice of them: read afresh, the matches would be 4.
  await renamed(shed, 'Garden shed');
  assert.equal((await window(2)).total, 3);
  assert.deepEqual(await window(3), { total: 3, titles: [] });
  // Another order reads the matches afresh, in its order.
  assert.deepEqual(await window(0, '&orderBy=title'), { total: 4, titles: ['Herb garden'] });

  // A write through the other node: read afresh.
  await create(b, headers, 'Garden path');
  assert.equal((await window(3)).total, 5);
});

test('two nodes on one database, in parallel: after the last write is answered, either node lists every match', async (t) => {
  const { first, second } = await secondHandle(t);
  const a = await buildTestApp(t, { db: first });
  const b = await buildTestApp(t, { db: second });
  const headers = a.site.headers;
  const WRITES = 12;
  // Writers on both nodes, and on each node a reader keeping lists while they write (a bounded
  // number: the credentials' rate limit counts them).
  let writing = true;
  const reader = async (node: TestApp) => {
    const seen: number[] = [];
    while (writing && seen.length < 50) seen.push((await listed(node, headers)).total);
    return seen;
  };
  const readers = [reader(a), reader(b)];
  await Promise.all(Array.from({ length: WRITES }, (_, i) => create(i % 2 ? a : b, headers, `Garden ${i}`)));
  writing = false;
  for (const seen of await Promise.all(readers)) {
    for (const total of seen) assert.ok(total >= 0 && total <= WRITES, String(total));
  }
  for (const node of [a, b]) {
    const after = await listed(node, headers);
    assert.equal(after.total, WRITES);
    assert.equal(after.titles.length, WRITES);
  }
  // And a page moved out of the list by one node is gone from the other's kept list.
  const page = await create(a, headers, 'Garden gate');
  assert.equal((await listed(b, headers)).total, WRITES + 1);
  const renamed = await a.app.inject({ method: 'PATCH', url: `/api/page/${page}`, headers, payload: { page_usertitle: 'Gate' } });
  assert.equal(renamed.statusCode, 200, renamed.body);
  assert.equal((await listed(b, headers)).total, WRITES);
});
