/**
 * Crash hygiene (issue 9): the real server process is SIGKILLed again and again under concurrent
 * page and blog writes (multipart, with images), and restarted on the same data. After every
 * restart each acknowledged write is there exactly as acknowledged, and the image storage holds
 * exactly the images the records name: no staged upload, no unreferenced image, no missing one.
 *
 * On SQLite, or on PostgreSQL with TEST_DATABASE_URL (see CASES for the image storage of each).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import type { ImageStorageKind } from '../src/config.js';
import type { DemoCredentials } from '../src/demo/credentials.js';
import { image, noisyJpeg } from './blog-fixtures.js';
import { type Shared, sha256, Writer } from './crash-writers.js';
import { ownPostgresDatabase, TEST_DATABASE_URL } from './helpers.js';
import { basic, HANG_LIMIT_MS, listening, type Started, start } from './server-process.js';

const KILLS = 5;
const WRITERS = 4;

interface Case {
  readonly database: 'sqlite' | 'postgres';
  readonly storage: ImageStorageKind;
}

/**
 * By default the suite's own database with the driver of its layout: SQLite with a folder (one
 * node), or, with TEST_DATABASE_URL, PostgreSQL with the database (several nodes). The SQLite
 * suite runs the SQLite case, so the PostgreSQL suite does not run it again. CRASH_IMAGE_STORAGE=both
 * runs every pairing the environment allows (each run is mostly server starts).
 */
const BOTH = process.env.CRASH_IMAGE_STORAGE === 'both';
const CASES: Case[] = [
  ...(!TEST_DATABASE_URL || BOTH ? [{ database: 'sqlite', storage: 'local' }] : []),
  ...(BOTH ? [{ database: 'sqlite', storage: 'database' }] : []),
  ...(TEST_DATABASE_URL ? [{ database: 'postgres', storage: 'database' }] : []),
  ...(TEST_DATABASE_URL && BOTH ? [{ database: 'postgres', storage: 'local' }] : []),
] as Case[];

/** The image names the storage holds, and how many staged objects, read beside the running server. */
type Inventory = () => Promise<{ committed: string[]; staged: number }>;

function inventoryOf(c: Case, dataDir: string, databaseUrl: string | undefined): Inventory {
  if (c.storage === 'local') {
    const root = path.join(dataDir, 'images');
    return async () => ({
      committed: (await readdir(root)).filter((n) => n !== '.staging').sort(),
      staged: (await readdir(path.join(root, '.staging')).catch(() => [])).length,
    });
  }
  const query = 'select name from images';
  if (!databaseUrl) {
    return async () => {
      const sqlite = new SQLite(path.join(dataDir, 'cms.sqlite'), { readonly: true });
      try {
        return split(sqlite.prepare(query).all() as { name: string | null }[]);
      } finally {
        sqlite.close();
      }
    };
  }
  return async () => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      return split((await client.query<{ name: string | null }>(query)).rows);
    } finally {
      await client.end();
    }
  };
}

function split(rows: { name: string | null }[]): { committed: string[]; staged: number } {
  return { committed: rows.flatMap((r) => (r.name ? [r.name] : [])).sort(), staged: rows.filter((r) => !r.name).length };
}

/** Every image path any blog shows, through the API. */
type ShownImages = { info_img: string; info_more_images: string[] };

/** The stored images the blogs show, and those their kept revisions show (a revision can be restored, so its images stay). */
async function referencedPaths(shared: Shared): Promise<Set<string>> {
  const paths = new Set<string>();
  const get = async (url: string) => (await fetch(`${shared.base}${url}`, { headers: { authorization: shared.authorization } })).json();
  const add = (blog: ShownImages) => {
    for (const p of [blog.info_img, ...blog.info_more_images]) if (p.startsWith('/images/')) paths.add(p);
  };
  for (let offset = 0; ; offset += 999) {
    const { data } = (await get(`/api/blog?pageSize=999&offset=${offset}`)) as { data: ShownImages[] };
    for (const blog of data) add(blog);
    if (data.length < 999) break;
  }
  for (let since = ''; ; ) {
    const { data, meta } = (await get(`/api/changes?type=blog&pageSize=999&since=${since}`)) as {
      data: { id: number; revision: number }[];
      meta: { nextCursor: string };
    };
    for (const change of data)
      add(((await get(`/api/blog/${change.id}/revisions/${change.revision}`)) as { data: ShownImages[] }).data[0]!);
    if (data.length < 999) return paths;
    since = meta.nextCursor;
  }
}

async function checkImages(shared: Shared, inventory: Inventory, round: number): Promise<number> {
  const referenced = await referencedPaths(shared);
  const held = await inventory();
  assert.equal(held.staged, 0, `round ${round}: no staged upload survives a restart`);
  assert.deepEqual(held.committed, [...referenced].map((p) => p.slice('/images/'.length)).sort(), `round ${round}: stored = referenced`);
  for (const p of referenced) {
    const response = await fetch(`${shared.base}${p}`);
    assert.equal(response.status, 200, p);
    const expected = shared.shaByPath.get(p);
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (expected) assert.equal(sha256(bytes), expected, `${p} is intact`);
  }
  return referenced.size;
}

/** Resolves once `more` writes beyond those acknowledged now are acknowledged, or `ended` settles (the writers stopped). */
function acknowledgedMore(shared: Shared, more: number, ended: Promise<unknown>): Promise<void> {
  const target = shared.acknowledged + more;
  return new Promise((resolve) => {
    shared.onAcknowledged = () => {
      if (shared.acknowledged >= target) resolve();
    };
    void ended.finally(resolve);
  });
}

for (const c of CASES) {
  test(`SIGKILL ${KILLS} times under concurrent writes: ${c.database}, IMAGE_STORAGE=${c.storage}`, {
    timeout: HANG_LIMIT_MS,
  }, async (t) => {
    const began = Date.now();
    const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-crash-'));
    t.after(() => rm(dataDir, { recursive: true, force: true }));
    const databaseUrl = c.database === 'postgres' ? (await ownPostgresDatabase(t, 'crash')).url : undefined;
    const env = {
      DATA_DIR: dataDir,
      IMAGE_STORAGE: c.storage,
      // One node: whatever the killed process left is removed at once (docs/blogs.md).
      IMAGE_CLEANUP_GRACE_SECONDS: '0',
      RATE_LIMIT_API: '0',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    const boot = async (): Promise<Started> => {
      const server = await start(t, env);
      await listening(server);
      return server;
    };

    let server = await boot();
    const credentials = JSON.parse(await readFile(path.join(dataDir, 'demo-credentials.json'), 'utf8')) as DemoCredentials;
    const authorization = basic(credentials);
    const page = await fetch(`${server.base}/api/page`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ page_usertitle: 'Crash blog' }),
    });
    const images = await Promise.all([
      image('jpeg', 40, 30, 1),
      image('png', 20, 20, 2),
      image('webp', 33, 12, 3),
      noisyJpeg(300 * 1024),
      noisyJpeg(700 * 1024),
    ]);
    const shared: Shared = {
      base: server.base,
      authorization,
      blogPage: ((await page.json()) as { data: { page: number }[] }).data[0]?.page as number,
      images,
      shaByPath: new Map(),
      acknowledged: 0,
    };
    const writers = Array.from({ length: WRITERS }, (_, i) => new Writer(`w${i}`, shared));
    const inventory = inventoryOf(c, dataDir, databaseUrl);
    const swept = { staged: 0, unreferenced: 0 };

    for (let round = 1; round <= KILLS; round++) {
      const running = writers.map((w) => w.run());
      // Writes get through on the new process (as many as there are writers), then the kill comes.
      await acknowledgedMore(shared, WRITERS, Promise.all(running));
      // Not a wait for an event: a kill at an arbitrary moment of the writes is what this test is
      // about, so the moment is drawn at random.
      await sleep(Math.random() * 1000);
      server.child.kill('SIGKILL');
      assert.deepEqual(await server.exit, { code: null, signal: 'SIGKILL' });
      await Promise.all(running);
      // Not a wait for an event: database timestamps have whole seconds, and what the killed process
      // staged must be "before now" by the restarted process's own clock, which a test cannot move.
      await sleep(1000 - (Date.now() % 1000) + 20);
      server = await boot();
      shared.base = server.base;
      for (const line of server
        .output()
        .split('\n')
        .filter((l) => l.includes('unreferenced images left by an earlier crash'))) {
        const { staged, unreferenced } = JSON.parse(line) as typeof swept;
        swept.staged += staged;
        swept.unreferenced += unreferenced;
      }
      const get = (url: string) => fetch(`${shared.base}${url}`, { headers: { authorization } });
      for (const writer of writers) await writer.verify(get);
      const shown = await checkImages(shared, inventory, round);
      t.diagnostic(`round ${round}: ${shared.acknowledged} acknowledged writes so far, ${shown} images shown`);
    }
    server.child.kill('SIGTERM');
    await server.exit;
    assert.ok(shared.acknowledged > KILLS * WRITERS, `writes got through between the kills (${shared.acknowledged})`);
    t.diagnostic(
      `${((Date.now() - began) / 1000).toFixed(1)} s; ${shared.acknowledged} acknowledged writes; the restarts swept ${swept.staged} staged and ${swept.unreferenced} unreferenced images`,
    );
  });
}
