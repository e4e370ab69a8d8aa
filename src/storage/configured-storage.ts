import path from 'node:path';
import type { Config } from '../config.js';
import type { DbHandle } from '../db/schema.js';
import { DatabaseImageStorage } from './database-image-storage.js';
import type { ImageStorage } from './image-storage.js';
import { LocalImageStorage } from './local-image-storage.js';

/** The storage IMAGE_STORAGE names: files under DATA_DIR/images, or rows of the database. */
export function configuredStorage(config: Config, db: DbHandle): ImageStorage {
  return config.images.storage === 'database' ? new DatabaseImageStorage(db) : new LocalImageStorage(path.join(config.dataDir, 'images'));
}
