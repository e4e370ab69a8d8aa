import type PG from 'pg';
import { CHANGES_CHANNEL, type RemoteChanges } from '../change-source.js';

const RELISTEN_MS = 1000;

/**
 * PostgreSQL: notifications on CHANGES_CHANNEL, on a connection of its own (`cms-changes <pid>` in
 * pg_stat_activity), opened on first use. Any notification counts as a change (a payload names the
 * table; another schema's changes on the same database count too, which costs a cache a read and
 * is never wrong). Opening and losing the connection count as a change as well. A lost one is opened
 * again after RELISTEN_MS; until then changes are not heard (`fresh()` is false).
 */
export function postgresRemoteChanges(
  pg: typeof PG,
  config: PG.ClientConfig,
  onLost: (error: Error) => void,
  changed: () => void,
): RemoteChanges {
  let listening = false;
  let started = false;
  let closed = false;
  let client: PG.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  /** Told of this outage already: while the database is away each new attempt fails too, and says nothing new. */
  let reported = false;

  const lost = (from: PG.Client, error: Error) => {
    if (client !== from) return;
    client = undefined;
    listening = false;
    changed();
    from.end().catch(() => {});
    if (closed) return;
    if (!reported) onLost(error);
    reported = true;
    retry = setTimeout(listen, RELISTEN_MS);
    retry.unref();
  };

  const listen = async () => {
    if (closed) return;
    const next = new pg.Client({
      ...config,
      application_name: `cms-changes ${process.pid}`,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    client = next;
    next.on('notification', changed);
    next.on('error', (error) => lost(next, error));
    next.on('end', () => lost(next, new Error('the connection that listens for changes ended')));
    try {
      await next.connect();
      await next.query(`LISTEN ${CHANGES_CHANNEL}`);
      if (client !== next) return;
      changed();
      listening = true;
      reported = false;
    } catch (error) {
      lost(next, error instanceof Error ? error : new Error(String(error)));
    }
  };

  return {
    fresh() {
      if (!started && !closed) {
        started = true;
        void listen();
      }
      return listening;
    },
    async close() {
      closed = true;
      listening = false;
      clearTimeout(retry);
      const open = client;
      client = undefined;
      await open?.end().catch(() => {});
    },
  };
}
