import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { type BlogTestApp, buildBlogApp } from '../../../test/blog-fixtures.js';
import { createEmptyPostgresDatabase, json, TEST_DATABASE_URL, type TestSite } from '../../../test/helpers.js';
import { createSite } from '../../accounts/account.service.js';
import { createDatabase, type Db } from '../../db/database.js';
import { migrateUpTo, settled } from '../../db/migrate.js';
import type { DbHandle } from '../../db/schema.js';
import { listTotal } from './content.queries.js';

/**
 * The totals migration 0010 keeps must be what count(*) says, for every website, after any write:
 * compares the kept row of each website with a fresh count of its pages and blogs.
 */
async function assertTotalsCounted(db: DbHandle): Promise<number> {
  const counted = await sql<{ site_id: number; pages: number; blogs: number }>`select s.id as site_id,
      (select count(*) from pages p where p.site_id = s.id) as pages,
      (select count(*) from blogs b where b.site_id = s.id) as blogs
    from sites s order by s.id`.execute(db);
  const kept = new Map((await db.selectFrom('content_totals').selectAll().execute()).map((row) => [row.site_id, row]));
  for (const row of counted.rows) {
    const mine = kept.get(row.site_id) ?? { pages: 0, blogs: 0 };
    assert.deepEqual(
      { site: row.site_id, pages: Number(mine.pages), blogs: Number(mine.blogs) },
      { site: row.site_id, pages: Number(row.pages), blogs: Number(row.blogs) },
      `site ${row.site_id}: the kept totals are the counts`,
    );
    kept.delete(row.site_id);
  }
  assert.deepEqual([...kept.keys()], [], 'no totals kept for a website that is gone');
  return counted.rows.length;
}

async function listTotalOf(t: BlogTestApp, site: TestSite, url: string): Promise<number> {
  const response = await t.app.inject({ url, headers: site.headers });
  assert.equal(response.statusCode, 200, response.body);
  return json(response).meta.total;
}

async function post(t: BlogTestApp, site: TestSite, url: string, payload: object): Promise<number> {
  const response = await t.app.inject({ method: 'POST', url, headers: site.headers, payload });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).data[0].id;
}

async function remove(t: BlogTestApp, site: TestSite, url: string): Promise<void> {
  const response = await t.app.inject({ method: 'DELETE', url, headers: site.headers });
  assert.equal(response.statusCode, 204, response.body);
}

test('an unfiltered list takes its total from the kept count, which follows every insert and delete', async (t) => {
  const app = await buildBlogApp(t);
  const db = app.db.kysely;
  const other = await app.addSite('Other');
  const empty = await app.addSite('Nothing yet');
  await assertTotalsCounted(db);
  assert.equal(await listTotalOf(app, empty, '/api/page'), 0, 'a website without a row has no pages');
  assert.equal(await listTotalOf(app, empty, '/api/blog'), 0);

  const pages = [app.pageId];
  for (let i = 0; i < 4; i++)
    pages.push(await post(app, app.site, '/api/page', { page_usertitle: `Page ${i}`, page_parent: i % 2 ? pages[0] : 0 }));
  const otherPage = await post(app, other, '/api/page', { page_usertitle: 'Elsewhere' });
  const blogs = [];
  for (let i = 0; i < 3; i++) blogs.push(await post(app, app.site, '/api/blog', { page: pages[i], info_title: `Blog ${i}` }));
  await post(app, other, '/api/blog', { page: otherPage, info_title: 'Elsewhere' });
  await assertTotalsCounted(db);
  assert.equal(await listTotalOf(app, app.site, '/api/page?pageSize=2'), 5);
  assert.equal(await listTotalOf(app, app.site, '/api/blog?pageSize=1&offset=2'), 3);
  assert.equal(await listTotalOf(app, other, '/api/page'), 1);
  // A filter is counted, not read from the kept total.
  assert.equal(await listTotalOf(app, app.site, `/api/page?parent=${pages[0]}`), 2);
  assert.equal(await listTotalOf(app, app.site, `/api/blog?page=${pages[0]}`), 1);

  await remove(app, app.site, `/api/blog/${blogs[2]}`);
  await remove(app, app.site, `/api/page/${pages[4]}`);
  await assertTotalsCounted(db);
  assert.equal(await listTotalOf(app, app.site, '/api/page'), 4);
  assert.equal(await listTotalOf(app, app.site, '/api/blog'), 2);

  // Writes that do not go through the service (the CLI, an import, a hand-written fix) count too.
  await sql`insert into pages (site_id, page_usertitle, page_alias) values (${app.site.siteId}, 'By hand', 'by-hand')`.execute(db);
  await sql`delete from blogs where site_id = ${other.siteId}`.execute(db);
  // (Its page has no stored record, which only the service writes: the list's total is read here.)
  await assertTotalsCounted(db);
  assert.equal(await listTotal(db, app.site.siteId, 'pages', undefined), 5);
  assert.equal(await listTotalOf(app, other, '/api/blog'), 0);
  // A page moved to another website by hand (the API never does it) leaves one total for the other.
  await sql`update pages set site_id = ${empty.siteId} where site_id = ${app.site.siteId} and page_alias = 'by-hand'`.execute(db);
  await assertTotalsCounted(db);
  assert.equal(await listTotal(db, empty.siteId, 'pages', undefined), 1);

  // A website deleted takes its pages, blogs and totals with it; the others keep theirs.
  await sql`delete from sites where id = ${other.siteId}`.execute(db);
  assert.equal(await assertTotalsCounted(db), 2);
  assert.equal(await listTotalOf(app, app.site, '/api/page'), 4);
});

test('a write rolled back leaves the totals as they were; one that commits with its website deleted leaves none', async (t) => {
  const app = await buildBlogApp(t);
  const db = app.db.kysely;
  await assert.rejects(
    db.transaction().execute(async (trx) => {
      await sql`insert into pages (site_id, page_usertitle, page_alias) values (${app.site.siteId}, 'Undone', 'undone')`.execute(trx);
      await sql`delete from blogs where site_id = ${app.site.siteId}`.execute(trx);
      throw new Error('rolled back');
    }),
    /rolled back/,
  );
  await assertTotalsCounted(db);
  assert.equal(await listTotalOf(app, app.site, '/api/page'), 1);

  const doomed = await createSite(db, 'Doomed');
  await db.transaction().execute(async (trx) => {
    await sql`insert into pages (site_id, page_usertitle, page_alias) values (${doomed.id}, 'Gone', 'gone')`.execute(trx);
    await sql`delete from sites where id = ${doomed.id}`.execute(trx);
  });
  await assertTotalsCounted(db);
});

test('writers at once on one website leave the exact totals (a pool of connections on PostgreSQL)', async (t) => {
  const app = await buildBlogApp(t);
  const created = await Promise.all(
    Array.from({ length: 24 }, (_, i) => post(app, app.site, '/api/page', { page_usertitle: `Racing ${i}` })),
  );
  await Promise.all([
    ...created.slice(0, 10).map((id) => remove(app, app.site, `/api/page/${id}`)),
    ...Array.from({ length: 8 }, (_, i) => post(app, app.site, '/api/blog', { page: app.pageId, info_title: `Racing ${i}` })),
  ]);
  await assertTotalsCounted(app.db.kysely);
  assert.equal(await listTotalOf(app, app.site, '/api/page'), 15);
  assert.equal(await listTotalOf(app, app.site, '/api/blog'), 8);
});

test('PostgreSQL: a write from a session on another search_path counts into its own schema', { skip: !TEST_DATABASE_URL }, async (t) => {
  const app = await buildBlogApp(t);
  assert.ok(app.db.schema, 'each PostgreSQL test has a schema of its own');
  const other = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await other.connect();
  t.after(() => other.end());
  await other.query('set search_path to public');
  await other.query(`insert into "${app.db.schema}".pages (site_id, page_alias) values ($1, 'by-psql')`, [app.site.siteId]);
  await assertTotalsCounted(app.db.kysely);
  assert.equal(await listTotal(app.db.kysely, app.site.siteId, 'pages', undefined), 2);
});

/** A connection of its own on the test's schema, ended after the test. */
async function session(t: TestContext, schema: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  t.after(() => client.end());
  await client.query(`set search_path to "${schema}"`);
  return client;
}

test('PostgreSQL: the totals lock nothing until the commit, so no later lock can deadlock against them', {
  skip: !TEST_DATABASE_URL,
}, async (t) => {
  const app = await buildBlogApp(t);
  const [first, second, observer] = [await session(t, app.db.schema!), await session(t, app.db.schema!), await session(t, app.db.schema!)];
  const insert = (client: pg.Client, alias: string) =>
    client.query(`insert into pages (site_id, page_alias) values ($1, $2)`, [app.site.siteId, alias]);
  await first.query('begin');
  await insert(first, 'first');
  await second.query('begin');
  await second.query('select page from pages where page = $1 for update', [app.pageId]);
  const secondPid = (await second.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  // Were the website's row locked by the first insert, this one would wait for the first
  // transaction, which is about to wait for this one's page lock: a deadlock. Whichever comes
  // first decides: the insert's answer, or its backend seen waiting for a lock (PostgreSQL tells
  // no one, so pg_locks is polled until the insert answers).
  let answered = false;
  const inserted = insert(second, 'second').then(() => {
    answered = true;
    return 'inserted' as const;
  });
  const blocked = (async () => {
    while (!answered) {
      const locks = await observer.query<{ n: number }>('select count(*)::int as n from pg_locks where pid = $1 and not granted', [
        secondPid,
      ]);
      if (locks.rows[0]!.n > 0) return 'waiting' as const;
      await delay(10); // the interval of the poll, not a wait for the event
    }
    return 'inserted' as const;
  })();
  const outcome = await Promise.race([inserted, blocked]);
  await blocked;
  if (outcome === 'waiting') {
    await first.query('rollback');
    await inserted;
    await second.query('rollback');
    assert.fail('an insert waited for another transaction on the same website that had not committed');
  }
  const waiting = first.query('select page from pages where page = $1 for update', [app.pageId]);
  await second.query('commit');
  await waiting;
  await first.query('commit');
  await assertTotalsCounted(app.db.kysely);
  assert.equal(await listTotal(app.db.kysely, app.site.siteId, 'pages', undefined), 3);
});

test('PostgreSQL: each migration fires the totals it left pending, so the next can alter the table', {
  skip: !TEST_DATABASE_URL,
}, async (t) => {
  const app = await buildBlogApp(t);
  const write = {
    up: async (db: Kysely<unknown>) => {
      await sql`insert into pages (site_id, page_alias) values (${app.site.siteId}, 'migrated')`.execute(db);
    },
  };
  const index = sql`create index pages_for_the_test on pages (page_menuname)`;
  await assert.rejects(
    app.db.kysely.transaction().execute(async (trx) => {
      await write.up(trx as unknown as Kysely<unknown>);
      await index.execute(trx);
    }),
    /pending trigger events/,
  );
  await app.db.kysely.transaction().execute(async (trx) => {
    await settled(write, trx as unknown as Kysely<unknown>, 'postgres');
    await index.execute(trx);
  });
  await assertTotalsCounted(app.db.kysely);
});

/** A database of its own with nothing migrated yet (an in-memory SQLite, or a PostgreSQL database). */
async function unmigrated(t: TestContext): Promise<Db> {
  if (TEST_DATABASE_URL) return (await createEmptyPostgresDatabase(t)).open();
  const db = createDatabase('sqlite::memory:');
  t.after(() => db.close());
  return db;
}

test('0010 counts the pages and blogs written before it', async (t) => {
  const db = await unmigrated(t);
  await migrateUpTo(db, '0009_change_notices');
  const raw = db.kysely as unknown as Kysely<unknown>;
  const sites = [await createSite(db.kysely, 'Many'), await createSite(db.kysely, 'One'), await createSite(db.kysely, 'None')];
  const insertPage = async (siteId: number, alias: string) =>
    (await sql<{ page: number }>`insert into pages (site_id, page_alias) values (${siteId}, ${alias}) returning page`.execute(raw)).rows[0]!
      .page;
  const first = await insertPage(sites[0]!.id, 'a');
  for (const alias of ['b', 'c']) await insertPage(sites[0]!.id, alias);
  await insertPage(sites[1]!.id, 'a');
  for (const name of ['x', 'y']) {
    await sql`insert into blogs (site_id, page, cid, info_filename) values (${sites[0]!.id}, ${first}, ${sites[0]!.id}, ${name})`.execute(
      raw,
    );
  }

  assert.deepEqual(await migrateUpTo(db, '0010_content_totals'), ['0010_content_totals']);
  assert.equal(await assertTotalsCounted(db.kysely), 3);
  const kept = await db.kysely.selectFrom('content_totals').select(['site_id', 'pages', 'blogs']).orderBy('site_id').execute();
  assert.deepEqual(
    kept.map((row) => [row.site_id, Number(row.pages), Number(row.blogs)]),
    [
      [sites[0]!.id, 3, 2],
      [sites[1]!.id, 1, 0],
      [sites[2]!.id, 0, 0],
    ],
  );
});
