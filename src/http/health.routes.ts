import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.js';
import type { RedisStore } from './redis-rate-limits.js';

/**
 * /readyz is 503 when the database does not answer: a node without it can serve nothing. Redis,
 * when configured, is reported but keeps the node ready: every node shares the one Redis, so a
 * 503 would take the whole fleet out of the load balancer at once, while the rate limits fall
 * back to the database and to each process (docs/rate-limits.md#when-redis-is-unavailable).
 */
/** Which worker answers, with WORKERS above 1 (its cluster id, as its log lines say). */
const WORKER = cluster.worker ? { worker: cluster.worker.id } : {};

export function registerHealth(app: FastifyInstance, db: Db, redis?: Pick<RedisStore, 'answers'>): void {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    const [database, redisState] = await Promise.all([
      db.ping().then(
        () => 'ok' as const,
        (err: unknown) => {
          request.log.warn({ err }, 'database not ready');
          return 'unavailable' as const;
        },
      ),
      redis?.answers().then((answers) => (answers ? 'ok' : 'unavailable')),
    ]);
    const body = { status: database, database, ...(redisState ? { redis: redisState } : {}), ...WORKER };
    return database === 'ok' ? body : reply.code(503).send(body);
  });
}
