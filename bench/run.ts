/**
 * Page API benchmark: the real app against a bare node:http + better-sqlite3 ceiling, on the same
 * SQLite file of 20,000 pages, 127.0.0.1 only. `npm run bench [-- --quick] [-- --profile]`.
 * Prints a table, PASS/MISS per target, writes bench/results.json; exits 0 unless it crashed.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  appEnv,
  benchDir,
  limitRun,
  loadAverage,
  type Measured,
  machine,
  measure,
  PAGE_BENCH_OPTIONS,
  printTable,
  type Server,
  sameAnswers,
  startServer,
  timing,
} from './harness.js';
import { summariseProfile } from './profile-summary.js';
import { seedDatabase } from './seed.js';

const { values: args } = parseArgs({
  options: {
    ...PAGE_BENCH_OPTIONS,
    // Extra node flags for the app child only, e.g. --app-flags=--max-semi-space-size=4
    'app-flags': { type: 'string', default: '' },
    // Comma-separated scenario keys to run (getById,list200,list999); all when absent.
    only: { type: 'string' },
  },
});
const time = timing(args);
const [DURATION, WARM_UP] = [time.seconds, time.warmUp];
const CONNECTIONS = 32;
const PAGES = Number(args.pages);

type Kind = 'app' | 'ceiling';
// Bounded: whatever happens, the run ends (generous: twice the planned load time plus set-up).
limitRun('bench', 3 * 2 * (DURATION + WARM_UP) * 2 + 180);

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
    const app = await startServer('app-server.js', appEnv(dataDir), [...appFlags, ...profiling]);
    const ceiling = await startServer('ceiling.js', { DATABASE_FILE: file, SITE_ID: String(seeded.siteId) });
    const { same } = await sameAnswers(app, ceiling, scenario.path(), headers);
    const measured: Partial<Record<Kind, Measured>> = {};
    for (const [kind, server] of [
      ['app', app],
      ['ceiling', ceiling],
    ] as Array<[Kind, Server]>) {
      measured[kind] = await measure(server, { connections: CONNECTIONS, makePath: scenario.path, headers }, time);
    }
    const ratio = measured.app!.reqPerSec / measured.ceiling!.reqPerSec;
    results[scenario.key] = { title: scenario.title, app: measured.app!, ceiling: measured.ceiling!, ratio, sameAnswers: same };
    console.log(`\n${scenario.title}   (answers identical: ${same === 'bytes' ? 'byte for byte' : 'same JSON'})`);
    printTable(
      [
        ['app', measured.app!],
        ['ceiling', measured.ceiling!],
      ],
      8,
    );
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
    machine: { ...host, loadAverageAtEnd: loadAverage() },
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
