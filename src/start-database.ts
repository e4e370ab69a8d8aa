// Opening the database for a start and making it ready (migrations, repairs, demo data) before any
// request is served. Only types are imported here: server.ts loads this before it reads the config.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import type { DemoCredentials } from './demo/credentials.js';

/** What getting the database ready did: done once per start, by the one process that serves or by the primary of several. */
export interface Prepared {
  readonly migrations: string[];
  readonly repairs: readonly object[];
  readonly demoCreated: DemoCredentials | undefined;
  readonly trigramIndexes: boolean;
}

/** Migrations, the trigram indexes, page cycle repairs and the demo data, in that order. */
export async function prepareDatabase(db: Db, config: Config, demoPassword: string | undefined): Promise<Prepared> {
  const [
    { migrateToLatest },
    { ensureTrigramIndexes },
    { seedDemo },
    { addDemoRedirects },
    { repairPageCycles },
    { changeLogWithWebhooks },
  ] = await Promise.all([
    import('./db/migrate.js'),
    import('./db/migrations/0022_trigram_filters.js'),
    import('./demo/seed.js'),
    import('./oauth/clients/client.service.js'),
    import('./content/pages/page.cycles.js'),
    import('./webhooks/webhook.outbox.js'),
  ]);
  // The start-up's writes (cycle repair, demo data) are logged and delivered as the app's are.
  const changeLog = changeLogWithWebhooks();
  const migrations = await migrateToLatest(db);
  // An extension an administrator created since the migration is used from this start on.
  const trigramIndexes = db.dialect === 'postgres' ? await ensureTrigramIndexes(db.kysely) : true;
  // Cycles a database may hold from before page moves were locked: broken before anything reads the tree.
  const repairs = await repairPageCycles(db.kysely, changeLog, { kind: 'system', id: 'page-cycles', name: 'page cycle repair at start' });
  const demoCreated = config.demo ? await seedDemo(db.kysely, changeLog, config, { password: demoPassword }) : undefined;
  if (config.demo) await addDemoRedirects(db.kysely, config.publicUrl);
  return { migrations, repairs, demoCreated, trigramIndexes };
}

export function logPrepared(log: FastifyBaseLogger, { migrations, repairs, trigramIndexes }: Prepared): void {
  // Says which node of several did the upgrade: the others wait for its lock, then find it done.
  log.info({ migrations }, migrations.length ? 'database migrations applied' : 'database schema is current');
  for (const repair of repairs) log.warn(repair, 'page tree cycle broken at its latest move');
  if (!trigramIndexes) {
    log.warn(
      'PostgreSQL extension pg_trgm is missing and this user may not create it: text filters that are not anchored at the start (contains, endsWith, a leading %) read every row of the website (docs/deploy.md#postgresql-extensions)',
    );
  }
}

export function openDatabase(
  config: Config,
  createDatabase: typeof import('./db/database.js').createDatabase,
  log: () => FastifyBaseLogger | undefined,
): Db {
  return createDatabase(config.databaseUrl, {
    synchronous: config.sqliteSynchronous,
    mmapMB: config.sqliteMmapMB,
    poolSize: config.databasePoolSize,
    onConnectionLost: (err) => log()?.warn({ err }, 'lost a database connection; the pool drops it and opens another for the next query'),
    onChangesUnheard: (err) =>
      log()?.warn(
        { err },
        'lost the connection that listens for credential changes; credentials are read on every request until it is back',
      ),
  });
}
