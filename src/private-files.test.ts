import assert from 'node:assert/strict';
import { chmod, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadConfig } from './config.js';
import { createDatabase } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { LocalImageStorage } from './storage/local-image-storage.js';

async function modeOf(file: string): Promise<number> {
  return (await stat(file)).mode & 0o777;
}

async function* bytes(): AsyncGenerator<Buffer> {
  yield Buffer.from('an image');
}

test('a fresh DATA_DIR, its database files and images are readable by the service user only', async (t) => {
  const parent = await mkdtemp(path.join(tmpdir(), 'cms-modes-'));
  t.after(() => rm(parent, { recursive: true, force: true }));
  const dataDir = path.join(parent, 'data');
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
  const db = createDatabase(config.databaseUrl);
  t.after(() => db.close());
  await migrateToLatest(db);
  const images = new LocalImageStorage(path.join(dataDir, 'images'));
  await images.commit(await images.stage(bytes()), `${'a'.repeat(32)}.png`);

  assert.equal(await modeOf(dataDir), 0o700);
  assert.equal(await modeOf(path.join(dataDir, 'images')), 0o700);
  assert.equal(await modeOf(path.join(dataDir, 'images', `${'a'.repeat(32)}.png`)), 0o600);
  const files = (await readdir(dataDir)).filter((name) => name.startsWith('cms.sqlite'));
  assert.deepEqual(files.sort(), ['cms.sqlite', 'cms.sqlite-shm', 'cms.sqlite-wal']);
  for (const file of [...files, 'cookie-secret']) assert.equal(await modeOf(path.join(dataDir, file)), 0o600, file);
});

test('a database an older version left world-readable is made private when opened', async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-modes-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const url = `sqlite:${path.join(dataDir, 'old.sqlite')}`;
  await createDatabase(url).close();
  await chmod(path.join(dataDir, 'old.sqlite'), 0o644);
  const db = createDatabase(url);
  t.after(() => db.close());
  await migrateToLatest(db);
  assert.equal(await modeOf(path.join(dataDir, 'old.sqlite')), 0o600);
  assert.equal(await modeOf(path.join(dataDir, 'old.sqlite-wal')), 0o600);
});
