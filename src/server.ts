// First: on an unsupported Node.js it stops before anything else loads.
import './node-version.js';
import cluster, { type Worker } from 'node:cluster';
import { existsSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type pino from 'pino';
import { type Config, loadConfig } from './config.js';
import { ConfigError } from './config-error.js';
import type { Db } from './db/database.js';
import { type DemoCredentials, demoBanner, demoCredentialsFile } from './demo/credentials.js';
import { isEntryPoint } from './entry-point.js';
import { stdoutLog } from './http/stdout-log.js';
import { logPrepared, openDatabase, type Prepared, prepareDatabase } from './start-database.js';

interface StartOptions {
  /** Owner password of a newly seeded demo website (DEMO_PASSWORD); random when absent. */
  readonly demoPassword?: string | undefined;
  /** Where the app logs (runServer: stdout, bounded); pino's default when absent. */
  readonly logStream?: pino.DestinationStream;
  /** A worker of several: its primary migrated the database and made the demo data. */
  readonly prepared?: boolean;
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

/**
 * config → database → migrations → demo data → app → listen. Used by `npm start`, `cms serve` and
 * tests. A worker of several (`prepared`) finds the database made ready by its primary.
 */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  // Loaded only now, after the configuration was read: a configuration error is then answered at
  // once, in one line, before the slow load of oidc-provider and the app (and anything they print).
  const [{ buildApp }, { createDatabase }] = await Promise.all([import('./app.js'), import('./db/database.js')]);
  let app: FastifyInstance | undefined;
  const db = openDatabase(config, createDatabase, () => app?.log);
  try {
    const prepared = options.prepared ? undefined : await prepareDatabase(db, config, options.demoPassword);
    app = await buildApp({ config, db, logStream: options.logStream });
    if (prepared) logPrepared(app.log, prepared);
    const demoCreated = prepared?.demoCreated;
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
 * With WORKERS above 1 this process is the primary of that many workers (runPrimary), each of
 * which runs this again as a cluster worker; undefined is returned then.
 */
export async function runServer(env: NodeJS.ProcessEnv = process.env, { json = false } = {}): Promise<RunningServer | undefined> {
  const config = loadConfig(env);
  if (config.workers > 1 && cluster.isPrimary) {
    await runPrimary(config, env, json);
    return undefined;
  }
  const worker = cluster.isWorker;
  // A worker's primary may ask it to stop while it is still starting: heard from the first moment.
  let stopAsked = false;
  let stopNow = () => {
    stopAsked = true;
  };
  if (worker) {
    process.on('message', (message) => {
      if ((message as { cms?: unknown } | undefined)?.cms === SHUTDOWN) stopNow();
    });
    // The primary is gone (killed): nobody would replace or stop this worker.
    process.on('disconnect', () => stopNow());
  }
  const logs = stdoutLog();
  const server = await startServer(config, { demoPassword: env.DEMO_PASSWORD || undefined, logStream: logs.stream, prepared: worker });
  logs.onCaughtUp((dropped) => server.app.log.warn({ dropped }, 'log lines dropped while stdout was not being read'));
  if (!worker) announceDemo(config, server.demoCreated, json);

  // Exits once the log lines are out, or the reader has had its time: a stalled stdout must
  // never keep the process alive.
  const exit = (code: number) => void logs.settle(LOG_SETTLE_MS).then(() => process.exit(code));
  let stopping = false;
  const stop = (signal: NodeJS.Signals | 'primary') => {
    // A worker hears of a stop twice (its primary's message, and Ctrl-C's SIGINT to the whole
    // process group): its primary ends it when a second signal means now.
    if (stopping && worker) return;
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
  stopNow = () => stop('primary');
  if (stopAsked) stopNow();
  return server;
}

/** The message a primary sends its workers to stop. */
const SHUTDOWN = 'shutdown';

/**
 * The primary of WORKERS processes (Node's cluster module: the primary accepts the connections
 * and hands them to the workers in turn). It makes the database ready once (migrations, demo
 * data) before any worker starts, keeps the workers' shared rate-limit counts, starts a new
 * worker for one that dies, and on SIGTERM/SIGINT has every worker finish its in-flight requests,
 * then exits. A worker that fails before it listens stops them all: the next would fail alike.
 */
async function runPrimary(config: Config, env: NodeJS.ProcessEnv, json: boolean): Promise<void> {
  const [{ default: pino }, { loggerOptions }, { createDatabase }, { serveClusterRateLimits }] = await Promise.all([
    import('pino'),
    import('./http/logging.js'),
    import('./db/database.js'),
    import('./http/cluster-rate-limits.js'),
  ]);
  const logs = stdoutLog();
  const log = pino(loggerOptions(config.logLevel, logs.stream)).child({ worker: 'primary' });
  const db = openDatabase(config, createDatabase, () => log);
  let prepared: Prepared;
  try {
    prepared = await prepareDatabase(db, config, env.DEMO_PASSWORD || undefined);
  } finally {
    await db.close();
  }
  logPrepared(log, prepared);
  announceDemo(config, prepared.demoCreated, json);

  const alive = new Map<number, Worker>();
  const listening = new Set<number>();
  serveClusterRateLimits(cluster, () => alive.size);
  const fork = () => {
    const worker = cluster.fork();
    alive.set(worker.id, worker);
  };
  const exit = (code: number) => void logs.settle(LOG_SETTLE_MS).then(() => process.exit(code));
  let stopping: number | undefined;
  const stopAll = (code: number) => {
    stopping ??= code;
    for (const worker of alive.values()) if (worker.isConnected()) worker.send({ cms: SHUTDOWN });
    if (alive.size === 0) exit(stopping);
    setTimeout(() => {
      log.error('workers took too long to stop; ending them');
      for (const worker of alive.values()) worker.process.kill('SIGKILL');
      exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
  };
  cluster.on('listening', (worker) => {
    listening.add(worker.id);
    if (listening.size === config.workers)
      log.info({ workers: config.workers, address: `${config.host}:${config.port}` }, 'every worker listens');
  });
  cluster.on('exit', (worker, code, signal) => {
    alive.delete(worker.id);
    const started = listening.delete(worker.id);
    if (stopping !== undefined) {
      if (alive.size === 0) exit(stopping);
    } else if (!started) {
      log.error({ exited: worker.id, code, signal }, 'a worker stopped before it listened; stopping every worker');
      stopAll(1);
    } else {
      log.warn({ exited: worker.id, code, signal }, 'a worker exited; starting another in its place');
      fork();
    }
  });
  let signalled = false;
  const stop = (signal: NodeJS.Signals) => {
    if (signalled) {
      for (const worker of alive.values()) worker.process.kill('SIGKILL');
      process.kill(process.pid, 'SIGKILL');
    }
    signalled = true;
    log.info({ signal }, 'shutting down: every worker finishes its in-flight requests');
    stopAll(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  log.info({ workers: config.workers }, 'starting workers');
  for (let i = 0; i < config.workers; i++) fork();
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
