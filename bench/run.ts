/**
 * Page API benchmark: the real app against a bare node:http + better-sqlite3 ceiling, on the same
 * SQLite file of 20,000 pages, 127.0.0.1 only. `npm run bench [-- --quick] [-- --profile]`.
 * Prints a table, PASS/MISS per target, writes bench/results.json; exits 0 unless it crashed.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { summariseProfile } from './profile-summary.js';
import { seedDatabase } from './seed.js';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    duration: { type: 'string' },
    pages: { type: 'string', default: '20000' },
    // Extra node flags for the app child only, e.g. --app-flags=--max-semi-space-size=4
    'app-flags': { type: 'string', default: '' },
    // Comma-separated scenario keys to run (getById,list200,list999); all when absent.
    only: { type: 'string' },
  },
});
const DURATION = Number(args.duration ?? (args.quick ? 3 : 10));
const WARM_UP = args.quick ? 1 : 3;
const CONNECTIONS = 32;
const PAGES = Number(args.pages);
const here = path.dirname(fileURLToPath(import.meta.url)); // dist/bench
const benchDir = path.resolve(here, '../../bench');

type Kind = 'app' | 'ceiling';
interface Server {
  kind: Kind;
  url: string;
  child: ChildProcess;
}
interface Measured {
  /** Before any load: what the server costs at rest. */
  idleRssMB: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxRssMB: number;
  requests: number;
  non2xx: number;
  errors: number;
}

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
// Bounded: whatever happens, the run ends (generous: twice the planned load time plus set-up).
const deadline = setTimeout(
  () => {
    console.error('bench: over its time limit, stopping');
    process.exit(1);
  },
  (3 * 2 * (DURATION + WARM_UP) * 2 + 180) * 1000,
);
deadline.unref();

async function startServer(kind: Kind, env: Record<string, string>, execArgv: string[] = []): Promise<Server> {
  const child = fork(path.join(here, kind === 'app' ? 'app-server.js' : 'ceiling.js'), [], {
    env: { ...process.env, ...env },
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.add(child);
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`${kind} server exited (${code}) before listening`)));
  });
  return { kind, url: `http://127.0.0.1:${port}`, child };
}

async function stopServer({ child }: Server): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.send('stop');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

function rssMB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

/** Peak VmRSS of a process, sampled every 100 ms until the returned function is called. */
function watchRss(pid: number): () => number {
  let max = rssMB(pid);
  const timer = setInterval(() => {
    max = Math.max(max, rssMB(pid));
  }, 100);
  return () => {
    clearInterval(timer);
    return Math.max(max, rssMB(pid));
  };
}

async function load(
  server: Server,
  makePath: () => string,
  headers: Record<string, string>,
  seconds: number,
): Promise<Omit<Measured, 'idleRssMB'>> {
  const stopRss = watchRss(server.child.pid!);
  const result = await autocannon({
    url: server.url,
    connections: CONNECTIONS,
    duration: seconds,
    // Lists of 999 at 32 connections queue for seconds; a request is counted, not dropped, up to 30 s.
    timeout: 30,
    headers,
    // A fresh path per request: random ids and offsets, not one hot row.
    requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: makePath() }) }],
  });
  return {
    reqPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxRssMB: stopRss(),
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/** The ceiling must answer exactly what the app answers, or the comparison means nothing. */
async function sameAnswers(app: Server, ceiling: Server, samplePath: string, headers: Record<string, string>): Promise<'bytes' | 'json'> {
  const [a, c] = await Promise.all([fetch(app.url + samplePath, { headers }), fetch(ceiling.url + samplePath)]);
  const [aText, cText] = await Promise.all([a.text(), c.text()]);
  if (a.status !== 200 || c.status !== 200) throw new Error(`${samplePath}: app ${a.status}, ceiling ${c.status}`);
  if (aText === cText) return 'bytes';
  if (isDeepStrictEqual(JSON.parse(aText), JSON.parse(cText))) return 'json';
  throw new Error(`${samplePath}: the ceiling's body differs from the app's`);
}

function machine() {
  return {
    nproc: os.availableParallelism(),
    cpu: /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown',
    ramGB: Math.round(os.totalmem() / 1024 ** 3),
    node: process.version,
    loadAverageAtStart: os.loadavg().map((l) => Number(l.toFixed(2))),
  };
}

const fmt = (n: number, digits = 0) => n.toFixed(digits).padStart(9);

async function main() {
  const host = machine();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cms-bench-'));
  const file = path.join(dataDir, 'cms.sqlite');
  const seedStart = performance.now();
  const seeded = await seedDatabase(file, PAGES);
  console.log(
    `seeded ${PAGES} pages (avg ${seeded.averageHtmlBytes} B of HTML) in ${((performance.now() - seedStart) / 1000).toFixed(1)} s; ` +
      `${CONNECTIONS} connections, ${WARM_UP} s warm-up + ${DURATION} s per run${args.profile ? ', app under --cpu-prof' : ''}`,
  );
  const headers = { authorization: `Basic ${Buffer.from(`${seeded.apiId}:${seeded.apiKey}`).toString('base64')}` };
  const span = seeded.lastId - seeded.firstId + 1;
  const randomId = () => seeded.firstId + Math.floor(Math.random() * span);
  // Random full pages of the list, as a client paging through the site would ask for them.
  const listPage = (size: number) => () =>
    `/api/page?pageSize=${size}&offset=${Math.floor(Math.random() * Math.floor(PAGES / size)) * size}`;
  const allScenarios = [
    { key: 'getById', title: 'GET /api/page/:id (random id)', path: () => `/api/page/${randomId()}`, minRatio: 0.8 },
    { key: 'list200', title: 'GET /api/page?pageSize=200', path: listPage(200), minRatio: 1.0 },
    { key: 'list999', title: 'GET /api/page?pageSize=999', path: listPage(999), minRatio: 1.0 },
  ];
  const only = args.only?.split(',');
  const scenarios = only ? allScenarios.filter((s) => only.includes(s.key)) : allScenarios;
  const profileDir = path.join(benchDir, 'profiles');
  if (args.profile) mkdirSync(profileDir, { recursive: true });

  const results: Record<string, { title: string; app: Measured; ceiling: Measured; ratio: number; sameAnswers: string }> = {};
  for (const scenario of scenarios) {
    const appFlags = args['app-flags'].split(' ').filter(Boolean);
    const profiling = args.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${scenario.key}.cpuprofile`] : [];
    // A fresh pair of servers per scenario: each one's RSS and profile belong to that scenario alone.
    const app = await startServer(
      'app',
      { DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO_DATA: 'false', PORT: '0', HOST: '127.0.0.1', PUBLIC_URL: 'http://127.0.0.1' },
      [...appFlags, ...profiling],
    );
    const ceiling = await startServer('ceiling', { DATABASE_FILE: file, SITE_ID: String(seeded.siteId) });
    const same = await sameAnswers(app, ceiling, scenario.path(), headers);
    const measured: Partial<Record<Kind, Measured>> = {};
    for (const server of [app, ceiling]) {
      const idleRssMB = rssMB(server.child.pid!);
      await load(server, scenario.path, headers, WARM_UP);
      measured[server.kind] = { idleRssMB, ...(await load(server, scenario.path, headers, DURATION)) };
      // Stopped at once: a backlog of slow list requests must not eat into the other's run.
      await stopServer(server);
    }
    const ratio = measured.app!.reqPerSec / measured.ceiling!.reqPerSec;
    results[scenario.key] = { title: scenario.title, app: measured.app!, ceiling: measured.ceiling!, ratio, sameAnswers: same };
    console.log(`\n${scenario.title}   (answers identical: ${same === 'bytes' ? 'byte for byte' : 'same JSON'})`);
    console.log('  server        req/s   p50 ms   p99 ms   RSS MB  (at rest)   requests  non-2xx');
    for (const kind of ['app', 'ceiling'] as const) {
      const m = measured[kind]!;
      console.log(
        `  ${kind.padEnd(8)}${fmt(m.reqPerSec)}${fmt(m.p50Ms, 1)}${fmt(m.p99Ms, 1)}${fmt(m.maxRssMB)}${`(${m.idleRssMB.toFixed(0)})`.padStart(11)}${fmt(m.requests).padStart(11)}${fmt(m.non2xx + m.errors)}`,
      );
    }
    console.log(`  app/ceiling ${ratio.toFixed(2)}×`);
  }

  const byId = results.getById!;
  const targets = [
    ...scenarios.map((s) => ({
      target: `${s.key}: app req/s ≥ ${s.minRatio.toFixed(1)}× ceiling`,
      value: `${results[s.key]!.ratio.toFixed(2)}×`,
      pass: results[s.key]!.ratio >= s.minRatio,
    })),
    { target: 'getById: app p99 ≤ 10 ms', value: `${byId.app.p99Ms} ms`, pass: byId.app.p99Ms <= 10 },
    ...scenarios.map((s) => ({
      target: `${s.key}: app RSS under load ≤ 150 MB`,
      value: `${results[s.key]!.app.maxRssMB.toFixed(0)} MB`,
      pass: results[s.key]!.app.maxRssMB <= 150,
    })),
  ];
  console.log('\nTargets');
  for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'MISS'}  ${t.target.padEnd(42)} ${t.value}`);

  const profiles: Record<string, string> = {};
  if (args.profile) {
    for (const s of scenarios) {
      const file = path.join(profileDir, `${s.key}.cpuprofile`);
      profiles[s.key] = summariseProfile(JSON.parse(readFileSync(file, 'utf8')), 15);
      writeFileSync(path.join(profileDir, `${s.key}.txt`), profiles[s.key]!);
      console.log(`\nProfile of the app, ${s.title} (${path.relative(process.cwd(), file)})\n${profiles[s.key]}`);
    }
  }
  const report = {
    date: new Date().toISOString(),
    machine: { ...host, loadAverageAtEnd: os.loadavg().map((l) => Number(l.toFixed(2))) },
    settings: {
      pages: PAGES,
      connections: CONNECTIONS,
      warmUpSeconds: WARM_UP,
      durationSeconds: DURATION,
      profile: args.profile,
      appFlags: args['app-flags'],
    },
    seeded: { averageHtmlBytes: seeded.averageHtmlBytes },
    scenarios: results,
    targets,
  };
  writeFileSync(path.join(benchDir, 'results.json'), `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwrote ${path.relative(process.cwd(), path.join(benchDir, 'results.json'))}`);
  rmSync(dataDir, { recursive: true, force: true });
}

await main();
