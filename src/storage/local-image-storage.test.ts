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

imageStorageContract('local', async (t) => new LocalImageStorage(path.join(await dataDir(t), 'images')));

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
