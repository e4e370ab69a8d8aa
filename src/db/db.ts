import type { KyselyConfig } from 'kysely';
import type { ChangeSource } from './change-source.js';
import type { DbHandle } from './schema.js';
import type { GroupCommit } from './sqlite/group-commit.js';

export type DialectName = 'sqlite' | 'postgres';

/**
 * An opened database and the parts it owns. What the process starts, migrates, checks and closes;
 * everything that reads or writes takes its `kysely` handle (DbHandle) instead.
 */
export interface Db {
  /** Kysely (a RootHandle: it carries the prepared lookups and the group commit, prepared-lookup.ts). */
  readonly kysely: DbHandle;
  readonly dialect: DialectName;
  /** PostgreSQL schema the tables live in (`public` unless configured); undefined on SQLite. */
  readonly schema: string | undefined;
  /** Counts changes to the rows that decide access, from this process and others (change-source.ts). */
  readonly changes: ChangeSource;
  /** SQLite with SQLITE_SYNCHRONOUS=full on a file: makes commits durable, several per flush. */
  readonly groupCommit: GroupCommit | undefined;
  /** Round trip to the database, for /readyz; on SQLite it also fails once a flush of the log has failed. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** PostgreSQL only: the schema used for every connection (tests isolate themselves this way). */
  readonly schema?: string;
  /** PostgreSQL only: connections in the pool (DATABASE_POOL_SIZE); 10 when absent. */
  readonly poolSize?: number;
  /** SQLite commit durability: see Config.sqliteSynchronous. */
  readonly synchronous?: 'full' | 'normal';
  /** SQLite's memory-mapped reads, in MB (0: off): see Config.sqliteMmapMB. DEFAULT_SQLITE_MMAP_MB when absent. */
  readonly mmapMB?: number;
  /** PostgreSQL only: told when a pooled connection fails (the server closed it, or it broke): the pool drops it. */
  readonly onConnectionLost?: (error: Error) => void;
  /** PostgreSQL only: told when the connection that listens for changes is lost (it is opened again). */
  readonly onChangesUnheard?: (error: Error) => void;
  /** Kysely's query log, BEGIN and COMMIT included (tests count transactions with it). */
  readonly log?: KyselyConfig['log'];
}
