import { PostgresAdapter } from 'kysely';
import { settingOf } from '../settings.js';
import type { DatabaseOptions, Db, DialectName } from './db.js';
import { openPostgresDatabase } from './postgres/database.js';
import type { DbHandle } from './schema.js';
import { openSqliteDatabase } from './sqlite/database.js';

export type { DatabaseOptions, Db, DialectName } from './db.js';

/** The dialect behind a handle (a transaction's handle shares its database's adapter). */
export function dialectOf(db: DbHandle): DialectName {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/** SQLITE_MMAP_MB's default, for a database opened without the configuration (tests, tools). */
const DEFAULT_SQLITE_MMAP_MB = Number(settingOf('SQLITE_MMAP_MB').default);

/** Opens `sqlite:FILE` or a `postgres://` URL; each dialect's parts are in its own folder. */
export function createDatabase(url: string, options: DatabaseOptions = {}): Db {
  if (url.startsWith('sqlite:')) {
    return openSqliteDatabase(url.slice('sqlite:'.length), { ...options, mmapMB: options.mmapMB ?? DEFAULT_SQLITE_MMAP_MB });
  }
  return openPostgresDatabase(url, options);
}
