import { createRequire } from 'node:module';
import type PG from 'pg';
import { type ChangeSource, connectionWatch } from '../change-source.js';

/** pg (7 MB resident) is loaded only when a PostgreSQL URL is configured. */
export function loadPg(): typeof PG {
  const pg = createRequire(import.meta.url)('pg') as typeof PG;
  // COUNT(*) and BIGINT come back as strings; every number this service stores fits in a double.
  pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
  return pg;
}

/**
 * A pool whose connections show the change source each write to a table that decides access, and
 * the end of the transaction that made it. Kysely uses `connect`, `query` and `release`.
 *
 * Every connection listens for its own 'error' for as long as it lives. pg-pool listens only
 * while a connection is idle; one checked out (a transaction between two statements, say) whose
 * server goes away would emit an 'error' nobody hears, and that ends the process. A connection
 * that failed is destroyed when released, never handed out again; the query in flight on it
 * fails with the connection's error, which the problem handler answers as a 503.
 */
export function watchedPool(pool: PG.Pool, changes: ChangeSource, onLost: (error: Error) => void) {
  const clients = new WeakMap<PG.PoolClient, PG.PoolClient>();
  const watching = (client: PG.PoolClient): PG.PoolClient => {
    const watch = connectionWatch(changes);
    let broken: Error | undefined;
    client.on('error', (error) => {
      if (broken) return;
      broken = error;
      onLost(error);
    });
    const query = (...args: unknown[]) => {
      const first = args[0] as string | { text?: string } | undefined;
      const ends = watch.before(typeof first === 'string' ? first : (first?.text ?? ''));
      // A cursor (Kysely's stream) comes back as it is, not as a promise.
      const result = (client.query as (...a: unknown[]) => unknown)(...args);
      if (!ends) return result;
      if (result instanceof Promise) return result.finally(() => watch.after());
      watch.after();
      return result;
    };
    const release = (error?: Error | boolean) => {
      watch.released();
      client.release(error || broken);
    };
    return { query, release } as unknown as PG.PoolClient;
  };
  return {
    async connect() {
      const client = await pool.connect();
      let watched = clients.get(client);
      if (!watched) {
        watched = watching(client);
        clients.set(client, watched);
      }
      return watched;
    },
    end: () => pool.end(),
  };
}
