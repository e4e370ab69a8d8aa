import type { DbHandle } from '../../db/schema.js';
import { lockInTransaction } from '../../db/transaction.js';

/** Class of the advisory lock on image references: one for every website, since records of any website may share an image. */
const IMAGE_REFERENCES_LOCK = 7304;

/**
 * Taken first by every write transaction that may add a reference to a stored image (a blog or
 * page write), `shared`; by the clean-up that removes an image no record refers to, `exclusive`.
 * So the clean-up's check cannot miss a reference that a write has made but not yet committed, and
 * a write that comes after the clean-up finds the image's metadata gone (findImageByPath). On
 * PostgreSQL only: SQLite runs one write transaction at a time.
 */
export function lockImageReferences(db: DbHandle, mode: 'shared' | 'exclusive'): Promise<void> {
  return lockInTransaction(db, IMAGE_REFERENCES_LOCK, 0, mode);
}
