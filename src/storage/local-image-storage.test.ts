import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { buildTestApp } from '../../test/helpers.js';
import { ABANDONED_STAGING_MS, LocalImageStorage } from './local-image-storage.js';

/** A data folder whose staging folder holds one file older than the safe age and one fresh file. */
async function dataDirWithStaged(t: TestContext): Promise<{ dataDir: string; staging: string }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-staging-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const staging = path.join(dataDir, 'images', '.staging');
  await mkdir(staging, { recursive: true });
  await writeFile(path.join(staging, 'old.part'), 'left by a crash');
  await writeFile(path.join(staging, 'fresh.part'), 'another node is writing this');
  const old = new Date(Date.now() - ABANDONED_STAGING_MS - 60_000);
  await utimes(path.join(staging, 'old.part'), old, old);
  return { dataDir, staging };
}

test('removeAbandoned removes staged files older than the safe age and keeps fresh ones', async (t) => {
  const { dataDir, staging } = await dataDirWithStaged(t);
  const storage = new LocalImageStorage(path.join(dataDir, 'images'));
  assert.equal(await storage.removeAbandoned(), 1);
  assert.deepEqual(await readdir(staging), ['fresh.part']);
  assert.equal(await new LocalImageStorage(path.join(dataDir, 'nowhere')).removeAbandoned(), 0, 'no staging folder yet');
});

test('an app starting on a data folder removes the staged files a crash left there', async (t) => {
  const { dataDir, staging } = await dataDirWithStaged(t);
  await buildTestApp(t, { config: { dataDir } });
  assert.deepEqual(await readdir(staging), ['fresh.part']);
});
