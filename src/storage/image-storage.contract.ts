/**
 * What every ImageStorage driver promises, as one suite each driver's test file runs against its
 * own storage (local-image-storage.test.ts, database-image-storage.test.ts), so the drivers
 * cannot drift apart. Not a test file itself: it has no storage to test.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { type TestContext, test } from 'node:test';
import { type ImageStorage, newImageName, thumbnailNameOf, type VariantCacheLimits } from './image-storage.js';

async function* chunksOf(bytes: Buffer, size = 64 * 1024): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function* failingAfter(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield bytes;
  throw new Error('the client went away');
}

async function listed(storage: ImageStorage, before = Date.now() + 5_000): Promise<string[]> {
  const names: string[] = [];
  for await (const name of storage.committedBefore(before)) names.push(name);
  return names.sort();
}

async function read(storage: ImageStorage, name: string): Promise<Buffer | undefined> {
  const image = await storage.open(name);
  return image && buffer(image.stream);
}

/** A clock a test moves by hand: each variant's use is a step later than the one before. */
function steppingClock(): { now: () => number; step: () => void } {
  let at = Date.UTC(2026, 0, 1);
  return { now: () => at, step: () => (at += 1000) };
}

/** Limits with only a count: the bytes budgets far away. */
const countOnly = (perImage: number): VariantCacheLimits => ({ perImage, bytesPerImage: 1 << 30, bytes: 1 << 30 });

/** `make`'s storage records variants' uses at `clock` (ms since the epoch) when one is given. */
export function imageStorageContract(driver: string, make: (t: TestContext, clock?: () => number) => Promise<ImageStorage>): void {
  test(`${driver}: a staged image is invisible until committed, then served byte for byte`, async (t) => {
    const storage = await make(t);
    // Large enough to span several chunks of any driver, and not a multiple of 64 KiB.
    const bytes = randomBytes(700 * 1024 + 123);
    const staged = await storage.stage(chunksOf(bytes));
    assert.equal(staged.bytes, bytes.length);
    const name = newImageName('image/png');
    assert.equal(await storage.exists(name), false);
    assert.deepEqual(await listed(storage), [], 'a staged image is not a committed one');

    await storage.commit(staged, name);
    assert.equal(await storage.exists(name), true);
    const image = await storage.open(name);
    assert.ok(image);
    assert.equal(image.bytes, bytes.length);
    assert.ok(Math.abs(image.modified.getTime() - Date.now()) < 5_000, 'modified is about now');
    assert.ok((await buffer(image.stream)).equals(bytes));
    assert.deepEqual(await listed(storage), [name]);
    assert.deepEqual(await listed(storage, Date.now() - 60_000), [], 'not committed before a minute ago');

    await storage.discard(staged);
    assert.ok((await read(storage, name))?.equals(bytes), 'discarding a committed image changes nothing');
  });

  test(`${driver}: discard drops a staged image, which can then not be committed`, async (t) => {
    const storage = await make(t);
    const staged = await storage.stage(chunksOf(Buffer.from('abc')));
    await storage.discard(staged);
    await storage.discard(staged);
    await assert.rejects(storage.commit(staged, newImageName('image/jpeg')));
    assert.equal(await storage.removeAbandoned(Date.now() + 5_000), 0, 'nothing staged is left');
  });

  test(`${driver}: a source that fails mid-upload leaves nothing staged`, async (t) => {
    const storage = await make(t);
    await assert.rejects(storage.stage(failingAfter(randomBytes(300 * 1024))), /the client went away/);
    assert.equal(await storage.removeAbandoned(Date.now() + 5_000), 0);
  });

  test(`${driver}: an empty image round-trips`, async (t) => {
    const storage = await make(t);
    const staged = await storage.stage(chunksOf(Buffer.alloc(0)));
    const name = newImageName('image/gif');
    await storage.commit(staged, name);
    assert.equal((await read(storage, name))?.length, 0);
  });

  test(`${driver}: remove deletes a committed image; a missing one is fine`, async (t) => {
    const storage = await make(t);
    const name = newImageName('image/webp');
    await storage.commit(await storage.stage(chunksOf(Buffer.from('webp bytes'))), name);
    await storage.remove(name);
    assert.equal(await storage.exists(name), false);
    assert.equal(await storage.open(name), undefined);
    await storage.remove(name);
    await storage.remove(newImageName('image/avif'));
  });

  test(`${driver}: only generated names are ever read`, async (t) => {
    const storage = await make(t);
    for (const name of ['../cms.sqlite', '.staging', 'a.jpg', `${'a'.repeat(32)}.svg`, `${'A'.repeat(32)}.jpg`, '']) {
      assert.equal(await storage.exists(name), false, name);
      assert.equal(await storage.open(name), undefined, name);
    }
    await assert.rejects(storage.commit(await storage.stage(chunksOf(Buffer.from('x'))), '../escape.jpg'));
  });

  test(`${driver}: removeAbandoned removes staged images older than the cut-off and keeps younger ones`, async (t) => {
    const storage = await make(t);
    const staged = await storage.stage(chunksOf(Buffer.from('in progress elsewhere')));
    const committed = newImageName('image/png');
    await storage.commit(await storage.stage(chunksOf(Buffer.from('committed'))), committed);
    assert.equal(await storage.removeAbandoned(Date.now() - 60_000), 0, 'younger than the cut-off: kept');
    assert.equal(await storage.removeAbandoned(Date.now() + 5_000), 1, 'older: removed');
    await assert.rejects(storage.commit(staged, newImageName('image/png')), 'it is gone');
    assert.equal(await storage.exists(committed), true, 'committed images are never abandoned');
  });

  test(`${driver}: variants are kept per image, the least recently used dropped past the bound, and go with their image`, async (t) => {
    const clock = steppingClock();
    const storage = await make(t, clock.now);
    const name = newImageName('image/jpeg');
    await storage.commit(await storage.stage(chunksOf(Buffer.from('original'))), name);
    const thumb = thumbnailNameOf(name);
    await storage.commit(await storage.stage(chunksOf(Buffer.from('thumbnail'))), thumb);
    assert.equal(await storage.readVariant(name, 'w10-h0-inside-q85.jpg'), undefined);
    await storage.writeVariant(name, 'a.jpg', Buffer.from('a'), countOnly(2));
    clock.step();
    await storage.writeVariant(name, 'b.jpg', Buffer.from('b'), countOnly(2));
    clock.step();
    assert.equal((await storage.readVariant(name, 'a.jpg'))?.toString(), 'a', 'a read is a use');
    clock.step();
    await storage.writeVariant(name, 'c.jpg', Buffer.from('c'), countOnly(2));
    assert.equal(await storage.readVariant(name, 'b.jpg'), undefined, 'the least recently used is dropped');
    assert.equal((await storage.readVariant(name, 'a.jpg'))?.toString(), 'a');
    assert.equal((await storage.readVariant(name, 'c.jpg'))?.toString(), 'c');
    await storage.writeVariant(thumb, 'a.jpg', Buffer.from('ta'), countOnly(2));
    assert.equal(await storage.readVariant(name, '../x'), undefined, 'only variant keys are read');

    await storage.remove(name);
    assert.equal(await storage.exists(thumb), false, 'the thumbnail goes with its image');
    assert.equal(await storage.readVariant(name, 'a.jpg'), undefined, 'and the variants');
    assert.equal(await storage.readVariant(thumb, 'a.jpg'), undefined);
  });

  test(`${driver}: the variant cache holds a byte budget per image and in total, dropping the least recently used`, async (t) => {
    const clock = steppingClock();
    const storage = await make(t, clock.now);
    const [one, two] = [newImageName('image/jpeg'), newImageName('image/png')];
    for (const name of [one, two]) await storage.commit(await storage.stage(chunksOf(Buffer.from('original'))), name);
    const kB = (n: number) => Buffer.alloc(n * 1024, n);
    const limits: VariantCacheLimits = { perImage: 20, bytesPerImage: 10 * 1024, bytes: 16 * 1024 };
    const held = async (name: string, keys: string[]) => {
      const found: string[] = [];
      for (const key of keys) {
        if (await storage.readVariant(name, key)) found.push(key);
        clock.step();
      }
      return found;
    };
    // Per image: 4 + 4 kB fit in 10, a third 4 kB does not, so the oldest goes.
    for (const key of ['a.jpg', 'b.jpg', 'c.jpg']) {
      await storage.writeVariant(one, key, kB(4), limits);
      clock.step();
    }
    assert.deepEqual(await held(one, ['a.jpg', 'b.jpg', 'c.jpg']), ['b.jpg', 'c.jpg']);
    // Reading them (above) was a use, in that order: b, then c.
    // In total: 8 kB of image one and 8 kB of image two fit in 16; 2 more kB do not, and the least
    // recently used of either image goes (b, read first above).
    await storage.writeVariant(two, 'x.png', kB(8), limits);
    clock.step();
    await storage.writeVariant(two, 'y.png', kB(2), limits);
    assert.deepEqual(await held(one, ['b.jpg', 'c.jpg']), ['c.jpg']);
    assert.deepEqual(await held(two, ['x.png', 'y.png']), ['x.png', 'y.png']);
    // Larger than an image's budget: served by the caller, never kept.
    await storage.writeVariant(one, 'huge.jpg', kB(11), limits);
    assert.equal(await storage.readVariant(one, 'huge.jpg'), undefined);
    assert.deepEqual(await held(one, ['c.jpg']), ['c.jpg'], 'and it evicted nothing');
  });

  test(`${driver}: readStaged gives back a staged object's bytes`, async (t) => {
    const storage = await make(t);
    const bytes = randomBytes(600 * 1024 + 7);
    const staged = await storage.stage(chunksOf(bytes));
    assert.ok((await storage.readStaged(staged)).equals(bytes));
  });
}
