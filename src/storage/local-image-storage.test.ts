import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { buildTestApp } from '../../test/helpers.js';
import { imageStorageContract } from './image-storage.contract.js';
import { LocalImageStorage } from './local-image-storage.js';

async function dataDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cms-images-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

imageStorageContract('local', async (t, clock) => new LocalImageStorage(path.join(await dataDir(t), 'images'), clock));

const HOUR = 60 * 60 * 1000;

/** A data folder whose staging folder holds one file last written two hours ago and one fresh file. */
async function dataDirWithStaged(t: TestContext): Promise<{ dataDir: string; staging: string }> {
  const dir = await dataDir(t);
  const staging = path.join(dir, 'images', '.staging');
  await mkdir(staging, { recursive: true });
  await writeFile(path.join(staging, 'old.part'), 'left by a crash');
  await writeFile(path.join(staging, 'fresh.part'), 'another node is writing this');
  const old = new Date(Date.now() - 2 * HOUR);
  await utimes(path.join(staging, 'old.part'), old, old);
  return { dataDir: dir, staging };
}

test('removeAbandoned goes by the staged file’s last write, and copes with no folder yet', async (t) => {
  const { dataDir: dir, staging } = await dataDirWithStaged(t);
  const storage = new LocalImageStorage(path.join(dir, 'images'));
  assert.equal(await storage.removeAbandoned(Date.now() - HOUR), 1);
  assert.deepEqual(await readdir(staging), ['fresh.part']);
  assert.equal(await new LocalImageStorage(path.join(dir, 'nowhere')).removeAbandoned(Date.now()), 0, 'no staging folder yet');
  assert.deepEqual(await asArray(new LocalImageStorage(path.join(dir, 'nowhere')).committedBefore(Date.now())), []);
});

test('writing a variant removes the parts a crash left beside that image’s variants, and its own part when the write fails', async (t) => {
  const root = path.join(await dataDir(t), 'images');
  const storage = new LocalImageStorage(root);
  const name = `${'a'.repeat(32)}.jpg`;
  const variants = path.join(root, '.variants', name);
  await mkdir(variants, { recursive: true });
  await writeFile(path.join(variants, '.0123456789abcdef.part'), 'left by a crash');
  await writeFile(path.join(variants, '.fedcba9876543210.part'), 'another node is writing this');
  const old = new Date(Date.now() - HOUR);
  await utimes(path.join(variants, '.0123456789abcdef.part'), old, old);
  await storage.writeVariant(name, 'w10-h0-inside-q85.jpg', Buffer.from('bytes'), { perImage: 20, bytesPerImage: 1 << 20, bytes: 1 << 20 });
  assert.deepEqual((await readdir(variants)).sort(), ['.fedcba9876543210.part', 'w10-h0-inside-q85.jpg']);

  // The rename cannot replace a folder that is not empty: the write fails, and leaves no part.
  await mkdir(path.join(variants, 'w20-h0-inside-q85.jpg', 'in-the-way'), { recursive: true });
  await assert.rejects(
    storage.writeVariant(name, 'w20-h0-inside-q85.jpg', Buffer.from('bytes'), { perImage: 20, bytesPerImage: 1 << 20, bytes: 1 << 20 }),
  );
  assert.deepEqual((await readdir(variants)).sort(), ['.fedcba9876543210.part', 'w10-h0-inside-q85.jpg', 'w20-h0-inside-q85.jpg']);
});

test('an app starting on a data folder removes the staged files a crash left there, past the grace period', async (t) => {
  const { dataDir: dir, staging } = await dataDirWithStaged(t);
  await buildTestApp(t, { config: { dataDir: dir, images: { storage: 'local', cleanupGraceMs: HOUR } } });
  assert.deepEqual(await readdir(staging), ['fresh.part']);
});

async function asArray<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}
