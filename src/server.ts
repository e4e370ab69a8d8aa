// First: on an unsupported Node.js it stops before anything else loads.
import './node-version.js';
import { existsSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type pino from 'pino';
import { type Config, ConfigError, loadConfig } from './config.js';
import type { Db } from './db/database.js';
import { type DemoCredentials, demoBanner, demoCredentialsFile } from './demo/credentials.js';
import { isEntryPoint } from './entry-point.js';
import { stdoutLog } from './http/stdout-log.js';

interface StartOptions {
  /** Owner password of a newly seeded demo website (DEMO_PASSWORD); random when absent. */
  readonly demoPassword?: string | undefined;
  /** Where the app logs (runServer: stdout, bounded); pino's default when absent. */
  readonly logStream?: pino.DestinationStream;
}

interface RunningServer {
  readonly app: FastifyInstance;
  readonly db: Db;
  /** Where it listens, e.g. http://127.0.0.1:8080 (the real port when PORT=0). */
  readonly address: string;
  /** Set when this start created the demo website: the one time its secrets can be shown. */
  readonly demoCreated: DemoCredentials | undefined;
  /** Stops accepting, lets in-flight requests finish, then closes the database. Idempotent. */
  close(): Promise<void>;
}

/** config → database → migrations → demo data → app → listen. Used by `npm start`, `cms serve` and tests. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  // Loaded only now, after the configuration was read: a configuration error is then answered at
  // once, in one line, before the slow load of oidc-provider and the app (and anything they print).
  const [{ buildApp }, { createDatabase }, { migrateToLatest }, { ensureTrigramIndexes }, { seedDemo }, { addDemoRedirects }] =
    await Promise.all([
      import('./app.js'),
      import('./db/database.js'),
      import('./db/migrate.js'),
      import('./db/migrations/0022_trigram_filters.js'),
      import('./demo/seed.js'),
      import('./oauth/clients/client.service.js'),
    ]);
  let app: FastifyInstance | undefined;
  const db = createDatabase(config.databaseUrl, {
    synchronous: config.sqliteSynchronous,
    mmapMB: config.sqliteMmapMB,
    poolSize: config.databasePoolSize,
    onConnectionLost: (err) => app?.log.warn({ err }, 'lost a database connection; the pool drops it and opens another for the next query'),
    onChangesUnheard: (err) =>
      app?.log.warn(
        { err },
        'lost the connection that listens for credential changes; credentials are read on every request until it is back',
      ),
  });
  try {
    const migrations = await migrateToLatest(db);
    // An extension an administrator created since the migration is used from this start on.
    const trigramIndexes = db.dialect === 'postgres' ? await ensureTrigramIndexes(db.kysely) : true;
    // Cycles a database may hold from before page moves were locked: broken before anything reads the tree.
    const { repairPageCycles } = await import('./content/pages/page.cycles.js');
    const repairs = await repairPageCycles(db.kysely, { kind: 'system', id: 'page-cycles', name: 'page cycle repair at start' });
    const demoCreated = config.demo ? await seedDemo(db.kysely, config, { password: options.demoPassword }) : undefined;
    if (config.demo) await addDemoRedirects(db.kysely, config.publicUrl);
    app = await buildApp({ config, db, logStream: options.logStream });
    // Says which node of several did the upgrade: the others wait for its lock, then find it done.
    app.log.info({ migrations }, migrations.length ? 'database migrations applied' : 'database schema is current');
    for (const repair of repairs) app.log.warn(repair, 'page tree cycle broken at its latest move');
    if (!trigramIndexes) {
      app.log.warn(
        'PostgreSQL extension pg_trgm is missing and this user may not create it: text filters that are not anchored at the start (contains, endsWith, a leading %) read every row of the website (docs/deploy.md#postgresql-extensions)',
      );
    }
    const address = await app.listen({ host: config.host, port: config.port });
    let closing: Promise<void> | undefined;
    const running = app;
    return {
      app,
      db,
      address,
      demoCreated,
      close: () => {
        closing ??= running.close().finally(() => db.close());
        return closing;
      },
    };
  } catch (error) {
    await app?.close();
    await db.close();
    throw error;
  }
}

/** How long in-flight requests get after SIGTERM; below the usual 30 s an orchestrator waits before SIGKILL. */
const SHUTDOWN_GRACE_MS = 20_000;
/** How long the last log lines get to reach a slow stdout reader before the process exits anyway. */
const LOG_SETTLE_MS = 2_000;

/**
 * The process around startServer: reads the environment, prints the demo credentials once, and
 * shuts down cleanly on SIGTERM/SIGINT (a second signal, or a stuck shutdown, exits at once).
 */
export async function runServer(env: NodeJS.ProcessEnv = process.env, { json = false } = {}): Promise<RunningServer> {
  const config = loadConfig(env);
  const logs = stdoutLog();
  const server = await startServer(config, { demoPassword: env.DEMO_PASSWORD || undefined, logStream: logs.stream });
  logs.onCaughtUp((dropped) => server.app.log.warn({ dropped }, 'log lines dropped while stdout was not being read'));
  announceDemo(config, server.demoCreated, json);

  // Exits once the log lines are out, or the reader has had its time: a stalled stdout must
  // never keep the process alive.
  const exit = (code: number) => void logs.settle(LOG_SETTLE_MS).then(() => process.exit(code));
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    // process.exit would wait for an image being encoded (see below).
    if (stopping) process.kill(process.pid, 'SIGKILL');
    stopping = true;
    server.app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    setTimeout(() => {
      server.app.log.error('shutdown took too long; exiting');
      // process.exit waits for libuv's worker threads, and so for an image libvips is encoding
      // (minutes for a large AVIF). SIGKILL ends it now; every acknowledged write is on disk.
      void logs.settle(LOG_SETTLE_MS).then(() => process.kill(process.pid, 'SIGKILL'));
    }, SHUTDOWN_GRACE_MS - LOG_SETTLE_MS).unref();
    server.close().then(
      () => exit(0),
      (err) => {
        server.app.log.error({ err }, 'shutdown failed');
        exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return server;
}

/** Synchronous, so the print comes before the first request is served (scripts wait for it). */
function announceDemo(config: Config, created: DemoCredentials | undefined, json: boolean): void {
  const file = demoCredentialsFile(config);
  if (created) {
    process.stdout.write(json ? `${JSON.stringify({ demo: created, credentialsFile: file })}\n` : demoBanner(created, file));
  } else if (config.demo && existsSync(file)) {
    process.stdout.write(
      json
        ? `${JSON.stringify({ demo: 'exists', credentialsFile: file })}\n`
        : `Demo website exists already; its credentials are in ${file}\n`,
    );
  }
}

/** A start-up failure as one line: configuration mistakes need no stack trace. */
function startupFailure(error: unknown): string {
  if (error instanceof ConfigError) return `Configuration error: ${error.message}`;
  const code = (error as NodeJS.ErrnoException).code;
  // Errors with a code (port taken, database unreachable or refusing the login, unreadable
  // SQLite file) are about the environment, not the code: their message says it all.
  if (typeof code === 'string') return `Cannot start: ${(error as Error).message || code}`;
  return `Cannot start: ${(error as Error)?.stack ?? String(error)}`;
}

if (isEntryPoint(import.meta.url)) {
  runServer().catch((error: unknown) => {
    process.stderr.write(`${startupFailure(error)}\n`);
    process.exit(1);
  });
}
