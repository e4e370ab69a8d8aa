import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { test } from 'node:test';
import { createTestDatabase } from '../../test/helpers.js';
import { dialectOf } from '../db/database.js';
import { inTransaction } from '../db/transaction.js';
import { DatabaseImageStorage, IMAGE_CHUNK_BYTES } from './database-image-storage.js';
import { imageStorageContract } from './image-storage.contract.js';
import { newImageName } from './image-storage.js';

imageStorageContract('database', async (t, clock) => new DatabaseImageStorage((await createTestDatabase(t)).kysely, clock));

async function* once(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield bytes;
}

test('database: bytes are stored in chunks of at most IMAGE_CHUNK_BYTES, with the MIME type of the name', async (t) => {
  const db = (await createTestDatabase(t)).kysely;
  const storage = new DatabaseImageStorage(db);
  // One source chunk larger than two stored chunks: it is split, not stored whole.
  const bytes = randomBytes(2 * IMAGE_CHUNK_BYTES + 10);
  const name = newImageName('image/jpeg');
  await storage.commit(await storage.stage(once(bytes)), name);
  const row = await db.selectFrom('images').selectAll().where('name', '=', name).executeTakeFirstOrThrow();
  assert.equal(row.mime, 'image/jpeg');
  assert.equal(row.bytes, bytes.length);
  const chunks = await db.selectFrom('image_chunks').select(['seq', 'data']).where('token', '=', row.token).orderBy('seq').execute();
  assert.deepEqual(
    chunks.map((c) => [c.seq, c.data.length]),
    [
      [0, IMAGE_CHUNK_BYTES],
      [1, IMAGE_CHUNK_BYTES],
      [2, 10],
    ],
  );
});

test('database: a commit inside a transaction that rolls back leaves the image staged, and discard then removes it', async (t) => {
  const db = (await createTestDatabase(t)).kysely;
  const storage = new DatabaseImageStorage(db);
  const staged = await storage.stage(once(Buffer.from('record refused')));
  const name = newImageName('image/png');
  await assert.rejects(
    inTransaction(db, async (trx) => {
      await storage.commit(staged, name, trx);
      // SQLite has one connection, which the transaction holds: a read from outside would wait for it.
      if (dialectOf(db) === 'postgres') assert.equal(await storage.exists(name), false, 'not visible outside the transaction');
      throw new Error('the record is refused');
    }),
    /refused/,
  );
  assert.equal(await storage.exists(name), false);
  await storage.discard(staged);
  assert.equal(await db.selectFrom('images').select('token').executeTakeFirst(), undefined);
  assert.equal(await db.selectFrom('image_chunks').select('token').executeTakeFirst(), undefined, 'chunks go with their image');
});

test('database: an image removed while it is being read ends the stream with an error, never short', async (t) => {
  const db = (await createTestDatabase(t)).kysely;
  const storage = new DatabaseImageStorage(db);
  const name = newImageName('image/png');
  await storage.commit(await storage.stage(once(randomBytes(3 * IMAGE_CHUNK_BYTES))), name);
  const image = await storage.open(name);
  assert.ok(image);
  await storage.remove(name);
  await assert.rejects(buffer(image.stream), /removed while it was being read/);
});
