import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { DbHandle } from '../db/schema.js';
import { formatTimestamp, now, parseTimestamp } from '../db/time.js';
import {
  type CachedVariant,
  type ImageStorage,
  isImageName,
  isVariantKey,
  mimeOf,
  overBudget,
  type StagedImage,
  type StoredImage,
  thumbnailNameOf,
  type VariantCacheLimits,
} from './image-storage.js';

/**
 * Bytes per stored chunk. An upload holds at most one chunk in memory before writing it, and a
 * read holds one at a time; 256 KiB keeps the rows small for both databases and the round trips
 * few (a 10 MiB image is 40 rows).
 */
export const IMAGE_CHUNK_BYTES = 256 * 1024;

/** Variants deleted per statement when the cache is over its total. */
const EVICT_BATCH = 200;

/** Committed names are listed this many at a time, so a large table is never read whole. */
const LIST_BATCH = 500;

/**
 * Images in the database (IMAGE_STORAGE=database), so every node serves every image without a
 * shared disk. A staged image is a row without a name, written chunk by chunk as the upload
 * arrives; the commit names it inside the record's transaction.
 */
export class DatabaseImageStorage implements ImageStorage {
  readonly inDatabase = true;

  /** `clock`: the time a variant's use is recorded at (tests hand in their own). */
  constructor(
    private readonly db: DbHandle,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Millisecond ISO time: variants used within one second still order by their last use. */
  private usedNow(): string {
    return new Date(this.clock()).toISOString();
  }

  async stage(chunks: AsyncIterable<Uint8Array>): Promise<StagedImage> {
    const token = randomBytes(16).toString('hex');
    await this.db.insertInto('images').values({ token, name: null, mime: null, bytes: 0, created_at: now(), committed_at: null }).execute();
    try {
      let pending: Uint8Array[] = [];
      let pendingBytes = 0;
      let seq = 0;
      let bytes = 0;
      // Writes whole chunks while there are enough bytes (and, at the end, what is left).
      const write = async (end: boolean) => {
        while (pendingBytes >= IMAGE_CHUNK_BYTES || (end && pendingBytes > 0)) {
          const whole = Buffer.concat(pending, pendingBytes);
          const data = whole.subarray(0, IMAGE_CHUNK_BYTES);
          const rest = whole.subarray(data.length);
          pending = rest.length > 0 ? [rest] : [];
          pendingBytes = rest.length;
          await this.db.insertInto('image_chunks').values({ token, seq: seq++, data }).execute();
        }
      };
      for await (const chunk of chunks) {
        bytes += chunk.length;
        pending.push(chunk);
        pendingBytes += chunk.length;
        await write(false);
      }
      await write(true);
      await this.db.updateTable('images').set({ bytes }).where('token', '=', token).execute();
      return { token, bytes };
    } catch (error) {
      await this.discard({ token, bytes: 0 });
      throw error;
    }
  }

  async commit(staged: StagedImage, name: string, within: DbHandle = this.db): Promise<void> {
    const mime = mimeOf(name);
    if (!isImageName(name) || !mime) throw new Error(`not an image name: ${name}`);
    const result = await within
      .updateTable('images')
      .set({ name, mime, committed_at: now() })
      .where('token', '=', staged.token)
      .where('committed_at', 'is', null)
      .executeTakeFirst();
    // Gone: discarded, or swept as abandoned by another node. The record must not name it.
    if (Number(result.numUpdatedRows) !== 1) throw new Error(`staged image ${staged.token} is gone`);
  }

  async discard(staged: StagedImage): Promise<void> {
    // The chunks go with the row (on delete cascade).
    await this.db
      .deleteFrom('images')
      .where('token', '=', staged.token)
      .where('committed_at', 'is', null)
      .execute()
      .catch(() => {});
  }

  async remove(name: string, within: DbHandle = this.db): Promise<void> {
    const names = [name, thumbnailNameOf(name)];
    await within.deleteFrom('image_variants').where('name', 'in', names).execute();
    await within.deleteFrom('images').where('name', 'in', names).execute();
  }

  async readStaged(staged: StagedImage): Promise<Buffer> {
    const chunks = await this.db.selectFrom('image_chunks').select('data').where('token', '=', staged.token).orderBy('seq').execute();
    return Buffer.concat(chunks.map((c) => c.data));
  }

  async readVariant(name: string, key: string): Promise<Buffer | undefined> {
    if (!isImageName(name) || !isVariantKey(key)) return undefined;
    const row = await this.db
      .selectFrom('image_variants')
      .select('data')
      .where('name', '=', name)
      .where('variant', '=', key)
      .executeTakeFirst();
    if (!row) return undefined;
    await this.db
      .updateTable('image_variants')
      .set({ used_at: this.usedNow() })
      .where('name', '=', name)
      .where('variant', '=', key)
      .execute();
    return row.data;
  }

  async writeVariant(name: string, key: string, data: Buffer, limits: VariantCacheLimits): Promise<void> {
    if (!isImageName(name) || !isVariantKey(key)) throw new Error(`not a variant: ${name} ${key}`);
    if (data.length > Math.min(limits.bytesPerImage, limits.bytes)) return;
    // Another node may have made the same variant meanwhile: the same bytes, so either row will do.
    await this.db
      .insertInto('image_variants')
      .values({ name, variant: key, data, bytes: data.length, used_at: this.usedNow() })
      .onConflict((oc) => oc.columns(['name', 'variant']).doNothing())
      .execute();
    const kept = { name, key };
    const own = await this.db
      .selectFrom('image_variants')
      .select(['name', 'variant', 'bytes', 'used_at'])
      .where('name', '=', name)
      .execute();
    const dropped = overBudget(own.map(cached), limits.perImage, limits.bytesPerImage, kept);
    if (dropped.length > 0) {
      await this.db
        .deleteFrom('image_variants')
        .where('name', '=', name)
        .where(
          'variant',
          'in',
          dropped.map((v) => v.key),
        )
        .execute();
    }
    await this.evictOverTotal(limits.bytes, kept);
  }

  /**
   * Least recently used variants of any image, until all of them fit in `budget` bytes. The sum is
   * one aggregate; the rows are read (without their data) only when it is over.
   */
  private async evictOverTotal(budget: number, kept: { name: string; key: string }): Promise<void> {
    const { total } = await this.db
      .selectFrom('image_variants')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('bytes'), eb.lit(0)).as('total'))
      .executeTakeFirstOrThrow();
    if (Number(total) <= budget) return;
    const rows = await this.db.selectFrom('image_variants').select(['name', 'variant', 'bytes', 'used_at']).execute();
    const dropped = overBudget(rows.map(cached), Number.POSITIVE_INFINITY, budget, kept);
    for (let at = 0; at < dropped.length; at += EVICT_BATCH) {
      const batch = dropped.slice(at, at + EVICT_BATCH);
      await this.db
        .deleteFrom('image_variants')
        .where((eb) => eb.or(batch.map((v) => eb.and([eb('name', '=', v.name), eb('variant', '=', v.key)]))))
        .execute();
    }
  }

  async exists(name: string): Promise<boolean> {
    if (!isImageName(name)) return false;
    const row = await this.db.selectFrom('images').select('token').where('name', '=', name).executeTakeFirst();
    return row !== undefined;
  }

  async open(name: string): Promise<StoredImage | undefined> {
    if (!isImageName(name)) return undefined;
    const row = await this.db.selectFrom('images').select(['token', 'bytes', 'committed_at']).where('name', '=', name).executeTakeFirst();
    if (!row?.committed_at) return undefined;
    return {
      stream: Readable.from(this.chunksOf(row.token, row.bytes)),
      bytes: row.bytes,
      modified: new Date(parseTimestamp(row.committed_at)),
    };
  }

  /**
   * One chunk per query, so a slow client holds no connection and no more than one chunk. Images
   * never change; one removed while it is being sent ends the stream with an error rather than
   * with fewer bytes than the Content-Length promised.
   */
  private async *chunksOf(token: string, bytes: number): AsyncGenerator<Buffer> {
    let sent = 0;
    for (let seq = 0; sent < bytes; seq++) {
      const chunk = await this.db
        .selectFrom('image_chunks')
        .select('data')
        .where('token', '=', token)
        .where('seq', '=', seq)
        .executeTakeFirst();
      if (!chunk) throw new Error(`image ${token} was removed while it was being read`);
      sent += chunk.data.length;
      yield chunk.data;
    }
  }

  async removeAbandoned(before: number): Promise<number> {
    const result = await this.db
      .deleteFrom('images')
      .where('committed_at', 'is', null)
      .where('created_at', '<', formatTimestamp(new Date(before)))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async *committedBefore(before: number): AsyncIterable<string> {
    const cutoff = formatTimestamp(new Date(before));
    for (let after = ''; ; ) {
      const rows = await this.db
        .selectFrom('images')
        .select('name')
        .where('committed_at', '<', cutoff)
        .where('name', '>', after)
        .orderBy('name')
        .limit(LIST_BATCH)
        .execute();
      for (const row of rows) if (row.name) yield row.name;
      const last = rows.at(-1)?.name;
      if (!last || rows.length < LIST_BATCH) return;
      after = last;
    }
  }
}

function cached(row: { name: string; variant: string; bytes: number; used_at: string }): CachedVariant {
  return { name: row.name, key: row.variant, bytes: Number(row.bytes), usedAt: Date.parse(row.used_at) };
}
