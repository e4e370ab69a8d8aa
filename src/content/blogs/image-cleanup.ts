import type { DbHandle } from '../../db/schema.js';
import { inTransaction } from '../../db/transaction.js';
import { IMAGE_PATH_PREFIX, type ImageStorage, imageNameOf, mainNameOf } from '../../storage/image-storage.js';
import { lockImageReferences } from '../shared/image-references.js';
import { deleteImageOwner, imageOwner, imageOwners, imagePathInUse, pathsWithImageRows } from './blog.repository.js';

interface SweepResult {
  /** Staged uploads removed: a process died before committing or discarding them. */
  readonly staged: number;
  /** Committed images removed that no record shows. */
  readonly unreferenced: number;
}

/**
 * Removes the stored image `name` if no record refers to it (imagePathInUse): no record of the
 * website that uploaded it, or of any website when that is not recorded; returns whether it did.
 * The check holds the image-references lock exclusively, so no write can be adding a reference
 * meanwhile; a database storage removes in that transaction, a file goes after the COMMIT (files
 * are never removed before the decision to remove them is committed). The owner's row goes with
 * the image, and never before it: an image left without one would fall under the any-website rule.
 */
export async function removeImageIfUnused(db: DbHandle, storage: ImageStorage, name: string): Promise<boolean> {
  // The owner is recorded under the image's own name, a thumbnail's included.
  const owned = mainNameOf(name);
  const unused = await inTransaction(db, async (trx) => {
    await lockImageReferences(trx, 'exclusive');
    const owner = await imageOwner(trx, owned);
    if (await imagePathInUse(trx, `${IMAGE_PATH_PREFIX}${name}`, owner)) return false;
    if (storage.inDatabase) {
      await storage.remove(name, trx);
      await deleteImageOwner(trx, owned);
    }
    return true;
  });
  if (unused && !storage.inDatabase) {
    await storage.remove(name);
    await deleteImageOwner(db, owned);
  }
  return unused;
}

/** What removeUnused needs of the service's dependencies. */
interface UnusedDeps {
  readonly db: DbHandle;
  readonly images: ImageStorage;
  /** Reports a file that could not be removed (the write stands). */
  readonly warn?: ((message: string, error: unknown) => void) | undefined;
}

/**
 * Removes files the blog service stored that no record refers to any more. Best effort: the write
 * stands. Inside a caller's transaction files are kept, since the caller may still roll back (a
 * file left over costs disk space, a file removed under a restored record loses an image).
 */
export async function removeUnused(deps: UnusedDeps, paths: readonly string[]): Promise<void> {
  if (deps.db.isTransaction) return;
  for (const path of paths) {
    const name = imageNameOf(path);
    if (!name) continue;
    try {
      await removeImageIfUnused(deps.db, deps.images, name);
    } catch (error) {
      deps.warn?.(`could not remove image ${name}`, error);
    }
  }
}

/** Names checked per round: one indexed query for the batch, then a full check of the few left. */
const BATCH = 500;

/**
 * The start-up sweep: removes staged uploads and committed images that no
 * record refers to, as a crash or a failed clean-up leaves them. Only what is older than `graceMs`:
 * with several nodes on one storage, a younger object may be an upload another node is writing, or
 * a file it has named and whose record it has not committed yet (the local driver names files just
 * before the COMMIT). A single node may pass 0: at its start nothing of its own is in progress.
 *
 * "Refers to" is imagePathInUse's rule, the one used when a blog drops an image: any image field,
 * list or HTML of a blog or page (or a kept revision) of the website that uploaded the image, or of
 * any website when that is not recorded. A legacy or foreign path is never a stored image, so
 * never swept.
 */
export async function removeOrphanImages(db: DbHandle, storage: ImageStorage, graceMs: number, now = Date.now()): Promise<SweepResult> {
  const before = now - graceMs;
  const staged = await storage.removeAbandoned(before);
  let unreferenced = 0;
  let batch: string[] = [];
  const sweep = async () => {
    const owners = await imageOwners(db, batch);
    const shown = await pathsWithImageRows(
      db,
      batch.map((name) => ({ path: `${IMAGE_PATH_PREFIX}${name}`, owner: owners.get(name) })),
    );
    for (const name of batch) {
      const path = `${IMAGE_PATH_PREFIX}${name}`;
      if (!shown.has(path) && (await removeImageIfUnused(db, storage, name))) unreferenced++;
    }
    batch = [];
  };
  for await (const stored of storage.committedBefore(before)) {
    // A thumbnail lives and goes with its image (storage.remove removes both), so it is judged by
    // its image's references.
    const name = mainNameOf(stored);
    if (batch.includes(name)) continue;
    batch.push(name);
    if (batch.length >= BATCH) await sweep();
  }
  if (batch.length > 0) await sweep();
  return { staged, unreferenced };
}
