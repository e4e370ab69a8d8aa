/**
 * OAuth benchmark (issues 4 and 11), the real app on a SQLite file of 20,000 pages, 127.0.0.1 only:
 * (a) refresh grants per second at the token endpoint, every worker on its own rotating chain;
 * (b) GET /api/page/<random id> with a Bearer token against the same with the legacy API key,
 * same server, same run. Tokens come from the real authorization flow over HTTP. A measurement,
 * not a test: exits 0 unless it crashed. `npm run bench:oauth [-- --quick] [-- --profile]`.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  appEnv,
  benchDir,
  type Loaded,
  limitRun,
  load,
  loadAverage,
  machine,
  PAGE_BENCH_OPTIONS,
  printTable,
  rssMB,
  startServer,
  stopServer,
  timing,
} from './harness.js';
import { addOwnerAndClient, authorize, refreshLoad } from './oauth-flow.js';
import { summariseProfile } from './profile-summary.js';
import { seedDatabase } from './seed.js';

const { values: args } = parseArgs({
  options: {
    ...PAGE_BENCH_OPTIONS,
    /** Refresh chains, one worker and one connection each. */
    chains: { type: 'string', default: '16' },
    connections: { type: 'string', default: '32' },
    /** Run the app with SQLITE_SYNCHRONOUS=normal to see what the default (full) costs. */
    synchronous: { type: 'string' },
  },
});
const time = timing(args);
/** NORMAL for the measurement; FULL, the service's own setting, is the default. */
const SYNC = args.synchronous?.toUpperCase() === 'NORMAL' ? 'NORMAL' : undefined;
const [CHAINS, CONNECTIONS, PAGES] = [Number(args.chains), Number(args.connections), Number(args.pages)];
/** The app's PUBLIC_URL, sent as `resource`: fixed, since the app's port is known only once it listens. */
const RESOURCE = 'http://127.0.0.1';
const NO_RATE_LIMITS = { RATE_LIMIT_API: '0', RATE_LIMIT_TOKEN: '0' };
limitRun('oauth bench', 3 * (time.warmUp + time.seconds) * 2 + 240);

/** Mean rate and p50, worst p99 and RSS, summed counts: one figure for several short runs. */
function combine(runs: Loaded[]): Loaded {
  const mean = (f: (r: Loaded) => number) => runs.reduce((sum, r) => sum + f(r), 0) / runs.length;
  const sum = (f: (r: Loaded) => number) => runs.reduce((total, r) => total + f(r), 0);
  return {
    reqPerSec: mean((r) => r.reqPerSec),
    p50Ms: mean((r) => r.p50Ms),
    p99Ms: Math.max(...runs.map((r) => r.p99Ms)),
    maxRssMB: Math.max(...runs.map((r) => r.maxRssMB)),
    requests: sum((r) => r.requests),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
  };
}

async function main() {
  const host = machine();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cms-oauth-bench-'));
  const file = path.join(dataDir, 'cms.sqlite');
  const seeded = await seedDatabase(file, PAGES);
  const setup = await addOwnerAndClient(file, seeded.siteId);
  // The rate limiter is off (it has a bench of its own): 16 chains of one client exceed any quota.
  const env = { ...appEnv(dataDir, RESOURCE), ...NO_RATE_LIMITS, ...(SYNC ? { SQLITE_SYNCHRONOUS: 'normal' } : {}) };
  const sync = SYNC ? 'SQLITE_SYNCHRONOUS=normal' : 'SQLITE_SYNCHRONOUS=full (default)';
  console.log(
    `seeded ${PAGES} pages; load average ${host.loadAverageAtStart.join(' ')} on ${host.nproc} CPUs; ${time.warmUp} s warm-up + ${time.seconds} s per run; SQLite ${sync}`,
  );
  const profileDir = path.join(benchDir, 'profiles');
  if (args.profile) mkdirSync(profileDir, { recursive: true });
  const profiling = (key: string) =>
    args.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${key}.cpuprofile`] : [];

  // (a) Refresh grants: CHAINS authorizations, then each worker refreshes its own chain.
  let app = await startServer('app-server.js', env, profiling('oauth-refresh'));
  const chains = (await authorize(app, RESOURCE, setup, CHAINS)).map((t) => t.refresh_token);
  const idleRefresh = rssMB(app.child.pid!);
  await refreshLoad(app, setup.clientId, chains, time.warmUp);
  const refresh = { idleRssMB: idleRefresh, ...(await refreshLoad(app, setup.clientId, chains, time.seconds)) };
  await stopServer(app);
  console.log(`\nPOST /api/auth/token grant_type=refresh_token, ${CHAINS} chains (one connection each)`);
  printTable([['refresh', refresh]], 10);
  if (refresh.failure) console.log(`  first failed refresh: ${refresh.failure}`);

  // (b) Bearer against the legacy key on one server; runs in A-B-B-A order so drift hits both alike.
  app = await startServer('app-server.js', env, profiling('oauth-bearer'));
  const [tokens] = await authorize(app, RESOURCE, setup, 1);
  const auth = {
    legacy: { authorization: `Basic ${Buffer.from(`${seeded.apiId}:${seeded.apiKey}`).toString('base64')}` },
    bearer: { authorization: `Bearer ${tokens!.access_token}` },
  };
  const randomId = () => seeded.firstId + Math.floor(Math.random() * (seeded.lastId - seeded.firstId + 1));
  const sample = `/api/page/${randomId()}`;
  const [a, b] = await Promise.all([fetch(app.url + sample, { headers: auth.legacy }), fetch(app.url + sample, { headers: auth.bearer })]);
  const [aText, bText] = await Promise.all([a.text(), b.text()]);
  if (a.status !== 200 || b.status !== 200 || aText !== bText)
    throw new Error(`${sample}: legacy ${a.status}, bearer ${b.status}, bodies differ`);
  const idleBearer = rssMB(app.child.pid!);
  const run = (kind: 'legacy' | 'bearer', seconds: number) =>
    load(app, { connections: CONNECTIONS, makePath: () => `/api/page/${randomId()}`, headers: auth[kind], seconds });
  await run('legacy', time.warmUp);
  await run('bearer', time.warmUp);
  const half = time.seconds / 2;
  const runs = { legacy: [] as Loaded[], bearer: [] as Loaded[] };
  for (const kind of ['legacy', 'bearer', 'bearer', 'legacy'] as const) runs[kind].push(await run(kind, half));
  await stopServer(app);
  const legacy = { idleRssMB: idleBearer, ...combine(runs.legacy) };
  const bearer = { idleRssMB: idleBearer, ...combine(runs.bearer) };
  const ratio = bearer.reqPerSec / legacy.reqPerSec;
  console.log(`\nGET /api/page/:id (random id), ${CONNECTIONS} connections, same server (answers identical: byte for byte)`);
  printTable(
    [
      ['legacy key', legacy],
      ['bearer', bearer],
    ],
    10,
  );
  console.log(`  bearer/legacy ${ratio.toFixed(2)}×`);

  const targets = [
    { target: 'refresh grants ≥ 1,000/s', value: `${refresh.reqPerSec.toFixed(0)}/s`, pass: refresh.reqPerSec >= 1000 },
    { target: 'refresh: no failed refresh', value: String(refresh.non2xx + refresh.errors), pass: refresh.non2xx + refresh.errors === 0 },
    { target: 'bearer GET by id ≥ 0.95× legacy key', value: `${ratio.toFixed(2)}×`, pass: ratio >= 0.95 },
    {
      target: 'bearer/legacy: no errors',
      value: String(bearer.non2xx + bearer.errors + legacy.non2xx + legacy.errors),
      pass: bearer.non2xx + bearer.errors + legacy.non2xx + legacy.errors === 0,
    },
  ];
  console.log('\nTargets');
  for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'MISS'}  ${t.target.padEnd(38)} ${t.value}`);

  if (args.profile) {
    for (const key of ['oauth-refresh', 'oauth-bearer']) {
      const summary = summariseProfile(JSON.parse(readFileSync(path.join(profileDir, `${key}.cpuprofile`), 'utf8')), 20);
      writeFileSync(path.join(profileDir, `${key}.txt`), summary);
      console.log(`\nProfile of the app, ${key}\n${summary}`);
    }
  }
  const out = path.join(benchDir, `oauth-results${SYNC ? '-normal' : ''}.json`);
  const settings = { pages: PAGES, chains: CHAINS, connections: CONNECTIONS, ...time, synchronous: sync, profile: args.profile };
  const report = {
    date: new Date().toISOString(),
    machine: { ...host, loadAverageAtEnd: loadAverage() },
    settings,
    scenarios: { refresh, bearerGetById: { legacy, bearer, ratio, order: 'legacy, bearer, bearer, legacy; half the duration each' } },
    targets,
  };
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwrote ${path.relative(process.cwd(), out)}`);
  rmSync(dataDir, { recursive: true, force: true });
}

await main();
