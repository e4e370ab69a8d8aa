import { PostgresDialect } from 'kysely';
import type PG from 'pg';
import { ChangeSource } from '../change-source.js';
import type { DatabaseOptions, Db } from '../db.js';
import { PreparedLookups, RootHandle } from '../prepared-lookup.js';
import { postgresRemoteChanges } from './listen.js';
import { loadPg, watchedPool } from './pool.js';

/** How long a PostgreSQL connection may take to open, or to be had from a full pool. */
const CONNECT_TIMEOUT_MS = 5000;

/** Names of the prepared lookups' statements: unique in the process, so never two texts under one name on a connection. */
let statementNames = 0;

/**
 * A PostgreSQL database: a pool of connections (DATABASE_POOL_SIZE), and the parts around it:
 * - the prepared lookups, as named statements on the pool's connections;
 * - the change source, fed by the statements that go out and by the notifications the access
 *   triggers send, heard on a connection of its own.
 */
export function openPostgresDatabase(url: string, options: DatabaseOptions): Db {
  const pg = loadPg();
  const connection = { connectionString: url, ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}) };
  // A database host that does not answer at all (a failover moving its address, a partition)
  // would otherwise hold a request for the operating system's TCP timeout, minutes: a connection
  // must be made within CONNECT_TIMEOUT_MS (the request then answers 503), and an idle one whose
  // peer vanished is found by TCP keep-alive.
  const pool = new pg.Pool({
    ...connection,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  const changes = new ChangeSource((changed) =>
    postgresRemoteChanges(pg, connection, (error) => options.onChangesUnheard?.(error), changed),
  );
  // A restart, failover or pg_terminate_backend ends the idle connections too, and pg reports that
  // as an 'error' event of the pool: without a listener it is an uncaught exception, and every node
  // on the database would exit at once. The pool has dropped the connection and opens a new one
  // for the next query, so there is nothing more to do than say so. Checked-out connections are
  // covered by watchedPool.
  const lost = (error: Error) => options.onConnectionLost?.(error);
  pool.on('error', lost);
  const lookups = new PreparedLookups({
    busy: () => false,
    prepare(text) {
      const name = `lookup_${++statementNames}`;
      return async (values) => (await pool.query({ name, text, values })).rows[0];
    },
  });
  const kysely = new RootHandle(
    {
      dialect: new PostgresDialect({ pool: watchedPool(pool, changes, lost) as unknown as PG.Pool }),
      ...(options.log ? { log: options.log } : {}),
    },
    lookups,
  );
  return {
    kysely,
    dialect: 'postgres',
    schema: options.schema ?? 'public',
    changes,
    groupCommit: undefined,
    async ping() {
      await pool.query('SELECT 1');
    },
    async close() {
      await changes.close();
      await kysely.destroy();
    },
  };
}
