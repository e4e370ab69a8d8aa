/**
 * What every benchmark here shares: servers in child processes (so RSS and the event loop are
 * theirs alone), VmRSS sampling, autocannon runs, the check that two servers answer alike, the
 * machine description, and a time limit that ends the run and its children whatever happens.
 * Importing this module runs nothing.
 */
import { type ChildProcess, type ForkOptions, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import autocannon, { type Request as CannonRequest } from 'autocannon';
import { wrkLoad } from './wrk.js';

export const here = path.dirname(fileURLToPath(import.meta.url)); // dist/bench
/** The source folder bench/, where results are written. */
export const benchDir = path.resolve(here, '../../bench');

export interface Server {
  url: string;
  child: ChildProcess;
}

export interface Measured {
  /** Before any load: what the server costs at rest. */
  idleRssMB: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxRssMB: number;
  /**
   * Peak RssAnon: the process's own memory. VmRSS also counts the file pages of SQLite's memory
   * map (SQLITE_MMAP_MB) the process has touched: the OS page cache, shared and reclaimable.
   */
  maxAnonMB?: number;
  requests: number;
  non2xx: number;
  errors: number;
  /**
   * The server's CPU time (user + system) per answered request, in µs: set by interleave
   * (rounds.ts), from the load's start until the server is idle again, so it also counts the at
   * most `connections` requests still in flight when the load stopped.
   */
  cpuUsPerRequest?: number;
  /** The load generator's own CPU time per request, in µs, where it is measured (wrk.ts). */
  clientCpuUsPerRequest?: number;
}
export type Loaded = Omit<Measured, 'idleRssMB'>;

const children = new Set<ChildProcess>();

/** Ends the process after `seconds` with exit code 1, and kills every child server on any exit. */
export function limitRun(label: string, seconds: number): void {
  process.on('exit', () => {
    for (const child of children) child.kill('SIGKILL');
  });
  setTimeout(() => {
    console.error(`${label}: over its time limit, stopping`);
    process.exit(1);
  }, seconds * 1000).unref();
}

/**
 * Forks dist/bench/<script> (or a script at an absolute path: another build's app-server.js),
 * which listens on 127.0.0.1 and reports its port over IPC.
 */
export async function startServer(script: string, env: Record<string, string>, execArgv: string[] = []): Promise<Server> {
  const child = forkTracked(path.resolve(here, script), {
    env: { ...process.env, ...env },
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before listening`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

/** Forks a module as a child that the run kills if it ends first (limitRun), until stopServer. */
export function forkTracked(modulePath: string, options: ForkOptions): ChildProcess {
  const child = fork(modulePath, [], options);
  children.add(child);
  return child;
}

/** Stops a server of startServer's (app-server.ts, the ceilings): they stop on a message. */
export const stopServer = (server: Server): Promise<void> => stopProcess(server, (child) => child.send('stop'), 10_000);

/** Asks a server to stop, as `ask` does, and waits until it has, killing it after `graceMs`. */
export async function stopProcess({ child }: Server, ask: (child: ChildProcess) => void, graceMs: number): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  ask(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

/**
 * Asks app-server.js (started with --expose-gc) for a full collection (V8's last-resort one, which
 * also gives back the free pages a regular one keeps) and waits until it is done,
 * then lets the OS settle for a moment: memory read next is what the process holds, not garbage.
 */
export async function collectGarbage({ child }: Server): Promise<void> {
  const done = new Promise<void>((resolve) => {
    const answered = (message: unknown) => {
      if ((message as { collected?: boolean } | null)?.collected !== true) return;
      child.off('message', answered);
      resolve();
    };
    child.on('message', answered);
  });
  child.send('gc');
  await done;
  await new Promise((resolve) => setTimeout(resolve, 200));
}

export function rssMB(pid: number): number {
  return memoryMB(pid).rss;
}

/** VmRSS and RssAnon of a process, in MB (0 when /proc does not say). */
export function memoryMB(pid: number): { rss: number; anon: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kB = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
  return { rss: kB('VmRSS'), anon: kB('RssAnon') };
}

/** Peak VmRSS and RssAnon of a process, sampled every 100 ms until the returned function is called. */
export function watchMemory(pid: number): () => { rss: number; anon: number } {
  const max = memoryMB(pid);
  const sample = () => {
    const now = memoryMB(pid);
    max.rss = Math.max(max.rss, now.rss);
    max.anon = Math.max(max.anon, now.anon);
  };
  const timer = setInterval(sample, 100);
  return () => {
    clearInterval(timer);
    sample();
    return max;
  };
}

/** Peak VmRSS of a process, sampled every 100 ms until the returned function is called. */
export function watchRss(pid: number): () => number {
  const stop = watchMemory(pid);
  return () => stop().rss;
}

export interface LoadOptions {
  connections: number;
  seconds: number;
  headers?: Record<string, string>;
  /** A fresh GET path per request (random ids and offsets, not one hot row); or `requests`. */
  makePath?: () => string;
  requests?: CannonRequest[];
  /**
   * Where the client runs: in this process (the default), or in one of its own (load-client.ts),
   * whose latencies then owe nothing to this process's event loop; or wrk (wrk.ts), which spends
   * a fraction of autocannon's CPU per request. `process` and `wrk` take GETs of `makePath`
   * only, drawn from 10,000 paths made beforehand.
   */
  client?: 'inline' | 'process' | 'wrk';
}

/** autocannon from this process, with the server's peak RSS sampled meanwhile. */
export async function load(server: Server, options: LoadOptions): Promise<Loaded> {
  const { makePath } = options;
  const requests = makePath ? [{ method: 'GET', setupRequest: (r: CannonRequest) => ({ ...r, path: makePath() }) }] : options.requests;
  const stopMemory = watchMemory(server.child.pid!);
  if (options.client === 'process' || options.client === 'wrk') {
    if (!makePath) throw new Error(`a ${options.client} client loads GETs of makePath only`);
    const paths = Array.from({ length: 10_000 }, makePath);
    const figures =
      options.client === 'wrk'
        ? await wrkLoad(server.url, { connections: options.connections, seconds: options.seconds, headers: options.headers ?? {}, paths })
        : await inClientProcess(server, options, paths);
    const peak = stopMemory();
    return { ...figures, maxRssMB: peak.rss, maxAnonMB: peak.anon };
  }
  const result = await autocannon({
    url: server.url,
    connections: options.connections,
    duration: options.seconds,
    // Lists of 999 at 32 connections queue for seconds; a request is counted, not dropped, up to 30 s.
    timeout: 30,
    headers: options.headers ?? {},
    requests: requests ?? [{ method: 'GET' }],
  });
  const peak = stopMemory();
  return {
    reqPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxRssMB: peak.rss,
    maxAnonMB: peak.anon,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/** The load run by load-client.ts in a process of its own; its figures when it is done. */
async function inClientProcess(server: Server, options: LoadOptions, paths: string[]): Promise<Omit<Loaded, 'maxRssMB' | 'maxAnonMB'>> {
  const client = forkTracked(path.resolve(here, 'load-client.js'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const answer = new Promise<Omit<Loaded, 'maxRssMB' | 'maxAnonMB'>>((resolve, reject) => {
      client.once('message', (m) => resolve(m as Omit<Loaded, 'maxRssMB' | 'maxAnonMB'>));
      client.once('exit', (code) => reject(new Error(`load-client.js exited (${code}) without its figures`)));
    });
    client.send({ url: server.url, connections: options.connections, seconds: options.seconds, headers: options.headers ?? {}, paths });
    return await answer;
  } finally {
    children.delete(client);
  }
}

/** parseArgs options of the benches that load the page database: timing, profiling, size. */
export const PAGE_BENCH_OPTIONS = {
  quick: { type: 'boolean', default: false },
  profile: { type: 'boolean', default: false },
  duration: { type: 'string' },
  pages: { type: 'string', default: '20000' },
} as const;

export interface Timing {
  warmUp: number;
  seconds: number;
}

/** `--quick`: 1 s warm-up and 3 s measured; otherwise 3 s and 10 s; `--duration=<s>` sets the measured run. */
export function timing(args: { quick?: boolean; duration?: string | undefined }): Timing {
  return { warmUp: args.quick ? 1 : 3, seconds: Number(args.duration ?? (args.quick ? 3 : 10)) };
}

/**
 * RSS at rest, a warm-up, the measured run; then the server is stopped at once, so a backlog of
 * slow requests cannot eat into the next server's run.
 */
export async function measure(server: Server, options: Omit<LoadOptions, 'seconds'>, time: Timing): Promise<Measured> {
  const idleRssMB = rssMB(server.child.pid!);
  await load(server, { ...options, seconds: time.warmUp });
  const measured = { idleRssMB, ...(await load(server, { ...options, seconds: time.seconds })) };
  await stopServer(server);
  return measured;
}

/** A ceiling must answer exactly what the app answers, or the comparison means nothing. */
export async function sameAnswers(app: Server, ceiling: Server, samplePath: string, headers: Record<string, string>) {
  const [a, c] = await Promise.all([fetch(app.url + samplePath, { headers }), fetch(ceiling.url + samplePath)]);
  const [aText, cText] = await Promise.all([a.text(), c.text()]);
  if (a.status !== 200 || c.status !== 200) throw new Error(`${samplePath}: app ${a.status}, ceiling ${c.status}`);
  if (aText === cText) return { same: 'bytes', body: aText } as const;
  if (isDeepStrictEqual(JSON.parse(aText), JSON.parse(cText))) return { same: 'json', body: aText } as const;
  throw new Error(`${samplePath}: the ceiling's body differs from the app's`);
}

export const loadAverage = () => os.loadavg().map((l) => Number(l.toFixed(2)));

export function machine() {
  return {
    nproc: os.availableParallelism(),
    cpu: /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown',
    ramGB: Math.round(os.totalmem() / 1024 ** 3),
    node: process.version,
    loadAverageAtStart: loadAverage(),
  };
}

export const fmt = (n: number, digits = 0) => n.toFixed(digits).padStart(9);

/** The table every bench prints, one row a server; `nameWidth` is its first column's. */
export function printTable(rows: Array<[string, Measured]>, nameWidth: number, rateDigits = 0): void {
  console.log(`  ${'server'.padEnd(nameWidth + 6)}req/s   p50 ms   p99 ms   RSS MB  (at rest)   requests  non-2xx`);
  for (const [name, m] of rows) {
    console.log(
      `  ${name.padEnd(nameWidth)}${fmt(m.reqPerSec, rateDigits)}${fmt(m.p50Ms, 1)}${fmt(m.p99Ms, 1)}${fmt(m.maxRssMB)}${`(${m.idleRssMB.toFixed(0)})`.padStart(11)}${fmt(m.requests).padStart(11)}${fmt(m.non2xx + m.errors)}`,
    );
  }
}

/**
 * The app's environment: the service's own configuration, silent, on a free loopback port. The
 * API rate limiter is on, as in production, with a quota the load never reaches (the default,
 * 600 a minute, would answer nearly every request with a 429). One process (`WORKERS=1`), as the
 * ceilings are: a section that measures workers sets its own.
 */
export function appEnv(dataDir: string, publicUrl = 'http://127.0.0.1'): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    DEMO_DATA: 'false',
    PORT: '0',
    HOST: '127.0.0.1',
    PUBLIC_URL: publicUrl,
    RATE_LIMIT_API: '100000000',
    WORKERS: '1',
  };
}
