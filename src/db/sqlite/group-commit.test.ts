import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GroupCommit } from './group-commit.js';

/** A GroupCommit whose flushes the test ends by hand, one at a time. */
function controlled() {
  const ends: { resolve: () => void; reject: (error: Error) => void }[] = [];
  const wal = new GroupCommit('unused', () => new Promise<void>((resolve, reject) => ends.push({ resolve, reject })));
  const settled = new Set<string>();
  const track = (name: string, promise: Promise<void> | undefined) => {
    assert.ok(promise, `${name}: something to wait for`);
    promise.then(
      () => settled.add(name),
      () => settled.add(`${name} failed`),
    );
    return promise;
  };
  const ticks = async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { wal, ends, settled, track, ticks };
}

test('GroupCommit: nothing written, nothing to wait for; one flush covers every write made before it started', async () => {
  const { wal, ends, settled, track, ticks } = controlled();
  assert.equal(wal.pending(), undefined);
  wal.wrote();
  wal.wrote();
  track('a', wal.pending());
  track('b', wal.until(1));
  await ticks();
  assert.equal(ends.length, 1, 'one flush for both');
  wal.wrote(); // written while the flush runs: not covered by it
  track('c', wal.pending());
  track('d', wal.pending());
  ends[0]!.resolve();
  await ticks();
  assert.deepEqual([...settled].sort(), ['a', 'b']);
  assert.equal(wal.synced, 2);
  assert.equal(ends.length, 2, 'the next flush, shared by c and d, started when the first ended');
  ends[1]!.resolve();
  await ticks();
  assert.deepEqual([...settled].sort(), ['a', 'b', 'c', 'd']);
  assert.equal(wal.synced, 3);
  assert.equal(wal.flushes, 2);
  assert.equal(wal.pending(), undefined);
});

test('GroupCommit: a failed flush fails its waiters and every later wait, without flushing again', async () => {
  const { wal, ends, settled, track, ticks } = controlled();
  wal.wrote();
  const first = track('a', wal.pending());
  await ticks();
  ends[0]!.reject(new Error('EIO: i/o error, fdatasync'));
  await assert.rejects(first, /write-ahead log could not be synced to disk: Error: EIO/);
  assert.ok(settled.has('a failed'));
  wal.wrote();
  await assert.rejects(wal.pending()!, /could not be synced/);
  await assert.rejects(wal.until(1), /could not be synced/);
  assert.equal(ends.length, 1, 'no flush after the failure');
  assert.equal(wal.synced, 0);
});

test('GroupCommit: the default flush fdatasyncs the log file, and a log that cannot be opened is a failure', async () => {
  const missing = new GroupCommit('/nonexistent-dir/cms.sqlite-wal');
  missing.wrote();
  await assert.rejects(missing.pending()!, /could not be synced to disk: Error: ENOENT/);
  await missing.close();
});
