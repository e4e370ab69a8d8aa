import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { sql } from 'kysely';
import { type BlogTestApp, buildBlogApp, DRIVERS, image, storageOf, storedImages } from '../../../test/blog-fixtures.js';
import { CHANGE_LOG } from '../../../test/helpers.js';
import { PreconditionFailedError, UnsupportedMediaTypeError, ValidationError } from '../../errors.js';
import { ImageProcessor, type ImageRules } from '../../storage/image-processor.js';
import { type ImageStorage, thumbnailNameOf } from '../../storage/image-storage.js';
import { SYSTEM_ACTOR } from '../history/change-log.js';
import { saveBlog } from './blog.service.js';
import { type StagedUploads, withStagedUploads } from './staged-uploads.js';

/** Rules that change every test image and give it a thumbnail: each upload leaves two staged files. */
const SHRINK: ImageRules = { maxWidth: 10, maxHeight: 10, cropAspect: false, thumbnail: { width: 4, height: 4 }, cropThumbnail: false };
const LIMITS = { maxFileBytes: 1024 * 1024, maxPixels: 1_000_000 };

async function* chunks(data: Buffer): AsyncGenerator<Buffer> {
  yield data;
}

function processorFor(t: TestContext): ImageProcessor {
  const processor = new ImageProcessor({ concurrency: 1, maxPixels: LIMITS.maxPixels });
  t.after(() => processor.close());
  return processor;
}

/** Receives two images, a primary and an additional one. */
async function receiveTwo(uploads: StagedUploads): Promise<void> {
  await uploads.receive({ role: 'primary', field: 'primaryImage', originalName: 'a.jpg' }, chunks(await image('jpeg', 40, 30)), LIMITS);
  await uploads.receive(
    { role: 'additional', field: 'additionalImage', originalName: 'b.png' },
    chunks(await image('png', 30, 40)),
    LIMITS,
  );
}

/** `storage`, whose commit fails after `after` calls, as a database error in the transaction would. */
function failingCommit(storage: ImageStorage, after: number): ImageStorage {
  let calls = 0;
  return new Proxy(storage, {
    get(target, property) {
      if (property === 'commit') {
        return async (...args: Parameters<ImageStorage['commit']>) => {
          if (++calls > after) throw new Error('the connection was lost');
          return target.commit(...args);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function assertNothingLeft(app: BlogTestApp, message: string): Promise<void> {
  assert.deepEqual(await storedImages(app), { committed: [], staged: 0 }, message);
}

for (const driver of DRIVERS) {
  const setup = (t: TestContext) => buildBlogApp(t, { images: { storage: driver, cleanupGraceMs: 3600_000 } });

  test(`${driver}: a saved write keeps the images it named, with their thumbnails, and removes every other staged file`, async (t) => {
    const app = await setup(t);
    const storage = storageOf(app);
    const processor = processorFor(t);
    const kept = await withStagedUploads(storage, async (uploads) => {
      await receiveTwo(uploads);
      const [primary] = await uploads.process(processor, SHRINK);
      assert.ok(primary?.thumbnail, 'the rules make a thumbnail');
      assert.equal((await storedImages(app)).staged, 4, 'two processed images and two thumbnails (the originals are discarded)');
      return uploads.save(app.db.kysely, async () => ({ result: primary, commit: [primary] }));
    });
    assert.deepEqual(await storedImages(app), {
      committed: [kept.name, thumbnailNameOf(kept.name)].sort(),
      staged: 0,
    });
  });

  test(`${driver}: a file refused by its bytes or its pixels removes it and the files staged before it`, async (t) => {
    const app = await setup(t);
    const storage = storageOf(app);
    await assert.rejects(
      withStagedUploads(storage, async (uploads) => {
        await receiveTwo(uploads);
        const pdf = Buffer.from('%PDF-1.4\n%%EOF\n');
        await uploads.receive({ role: 'additional', field: 'additionalImage', originalName: 'c.jpg' }, chunks(pdf), LIMITS);
      }),
      UnsupportedMediaTypeError,
    );
    await assertNothingLeft(app, 'a refused type');
    await assert.rejects(
      withStagedUploads(storage, async (uploads) => {
        await receiveTwo(uploads);
        const huge = await image('png', 2000, 1000);
        await uploads.receive({ role: 'additional', field: 'additionalImage', originalName: 'huge.png' }, chunks(huge), LIMITS);
      }),
      /UPLOAD_MAX_PIXELS/,
    );
    await assertNothingLeft(app, 'too many pixels');
  });

  test(`${driver}: a record refused by validation or by If-Match removes the staged and processed files`, async (t) => {
    const app = await setup(t);
    const deps = { db: app.db.kysely, changeLog: CHANGE_LOG, images: storageOf(app), processor: processorFor(t) };
    await assert.rejects(
      withStagedUploads(deps.images, async (uploads) => {
        await receiveTwo(uploads);
        // No title: refused in the transaction, after the images were processed.
        return saveBlog(deps, app.site.siteId, { page: app.pageId }, SYSTEM_ACTOR, { uploads });
      }),
      ValidationError,
    );
    await assertNothingLeft(app, 'a validation error');
    const { record } = await saveBlog(deps, app.site.siteId, { page: app.pageId, info_title: 'Held' }, SYSTEM_ACTOR);
    const stale = () => {
      throw new PreconditionFailedError('The blog was changed since it was read.');
    };
    await assert.rejects(
      withStagedUploads(deps.images, async (uploads) => {
        await receiveTwo(uploads);
        return saveBlog(deps, app.site.siteId, { id: record.info_id }, SYSTEM_ACTOR, { uploads, precondition: stale });
      }),
      PreconditionFailedError,
    );
    await assertNothingLeft(app, 'a failed precondition');
  });

  test(`${driver}: a database error in the write, or after the first image was named, removes every file`, async (t) => {
    const app = await setup(t);
    const processor = processorFor(t);
    await assert.rejects(
      withStagedUploads(storageOf(app), async (uploads) => {
        await receiveTwo(uploads);
        await uploads.process(processor, SHRINK);
        return uploads.save(app.db.kysely, async (trx) => {
          await sql`select * from no_such_table`.execute(trx);
          return { result: undefined, commit: uploads.images };
        });
      }),
      /no_such_table/,
    );
    await assertNothingLeft(app, 'a statement that failed');
    // The first image is named, then the transaction fails: a file storage has renamed it already.
    await assert.rejects(
      withStagedUploads(failingCommit(storageOf(app), 1), async (uploads) => {
        await receiveTwo(uploads);
        await uploads.process(processor, SHRINK);
        return uploads.save(app.db.kysely, async () => ({ result: undefined, commit: uploads.images }));
      }),
      /the connection was lost/,
    );
    await assertNothingLeft(app, 'a failure after an image was named');
  });

  test(`${driver}: a client gone, a shutdown or a failure mid-way through processing removes every file`, async (t) => {
    const app = await setup(t);
    const storage = storageOf(app);
    const processor = processorFor(t);
    const gone = new AbortController();
    gone.abort();
    await assert.rejects(
      withStagedUploads(storage, async (uploads) => {
        await receiveTwo(uploads);
        await uploads.process(processor, SHRINK, gone.signal);
      }),
      /closed before/,
    );
    await assertNothingLeft(app, 'a client gone');
    // The second image is refused after the first was processed and staged anew with its thumbnail.
    let calls = 0;
    const refusing = new Proxy(processor, {
      get(target, property) {
        if (property !== 'process') return Reflect.get(target, property, target);
        return (...args: Parameters<ImageProcessor['process']>) => {
          if (++calls > 1) throw new Error('libvips failed');
          return target.process(...args);
        };
      },
    });
    await assert.rejects(
      withStagedUploads(storage, async (uploads) => {
        await receiveTwo(uploads);
        await uploads.process(refusing, SHRINK);
      }),
      /libvips failed/,
    );
    await assertNothingLeft(app, 'a failure mid-way');
    const closed = processorFor(t);
    closed.close();
    await assert.rejects(
      withStagedUploads(storage, async (uploads) => {
        await receiveTwo(uploads);
        await uploads.process(closed, SHRINK);
      }),
      /shutting down/,
    );
    await assertNothingLeft(app, 'a shutdown');
  });

  test(`${driver}: a restaged image its blog no longer shows is removed; a write with images refuses a caller's transaction`, async (t) => {
    const app = await setup(t);
    const storage = storageOf(app);
    const made = await withStagedUploads(storage, async (uploads) => {
      const restaged = await uploads.restage(chunks(await image('jpeg', 40, 30)), {
        role: 'primary',
        originalName: 'a.jpg',
        sha256: '0'.repeat(64),
        bytes: 0,
        width: 40,
        height: 30,
        type: 'image/jpeg',
        rules: '',
      });
      assert.match(restaged.path, /^\/images\/[0-9a-f]{32}\.jpg$/);
      return uploads.save(app.db.kysely, async () => ({ result: false, commit: [] }));
    });
    assert.equal(made, false);
    await assertNothingLeft(app, 'nothing committed');
    await assert.rejects(
      withStagedUploads(storage, async (uploads) => {
        await receiveTwo(uploads);
        return app.db.kysely.transaction().execute((trx) => uploads.save(trx, async () => ({ result: undefined, commit: uploads.images })));
      }),
      /must own its transaction/,
    );
    await assertNothingLeft(app, 'refused in a caller’s transaction');
  });
}
