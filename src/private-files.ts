import { chmodSync } from 'node:fs';

/**
 * DATA_DIR holds the database, the cookie secret and the demo credentials: only the service's own
 * user may enter the folders the service creates in it (a folder that exists already keeps the
 * mode its owner chose). The process serves the images itself, so they need no wider access.
 */
export const PRIVATE_DIR_MODE = 0o700;

/** Files readable and writable by the service's own user only. */
export const PRIVATE_FILE_MODE = 0o600;

/** chmod each file that exists to PRIVATE_FILE_MODE; a missing one is fine. */
export function makePrivate(files: readonly string[]): void {
  for (const file of files) {
    try {
      chmodSync(file, PRIVATE_FILE_MODE);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}
