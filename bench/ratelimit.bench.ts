/**
 * What the content API's rate limiter costs (issue 9: "at most 5 % of GET-by-id throughput, with
 * the limiter on and off, in one run"). The real app, three servers at once on one SQLite file of
 * pages: RATE_LIMIT_API=0, the limiter counting in the process, and counting in Redis. Short
 * rounds, the servers' order rotated every round, so a change in the machine's load falls on all
 * alike; each round gives the ratio on/off, and the median ratio is the figure; so does each
 * server's CPU time per request, which a machine shared with other work disturbs far less. Quotas are far
 * above what the load reaches, so every request is counted and none refused.
 * `npm run bench:ratelimit [-- --quick] [-- --rounds=N --round-seconds=S --redis=URL|none]`.
 * A measurement, not a test: exits 0 unless it crashed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { redisAnswers } from '../test/helpers.js';
import { appEnv, benchDir, type Loaded, limitRun, load, loadAverage, machine, type Server, startServer, stopServer } from './harness.js';
import { cpuSeconds, median } from './rounds.js';
import { seedDatabase } from './seed.js';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    'round-seconds': { type: 'string' },
    pages: { type: 'string', default: '20000' },
    /** The Redis to count in; `none` leaves that server out. */
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
  },
});
const ROUNDS = Number(args.rounds ?? (args.quick ? 4 : 12));
const ROUND_SECONDS = Number(args['round-seconds'] ?? (args.quick ? 2 : 4));
const CONNECTIONS = 32;
const PAGES = Number(args.pages);
/** Never reached: about 5,000 req/s is 300,000 a minute. */
const QUOTA = '100000000';
const MAX_COST = 0.05;
limitRun('rate limit bench', (ROUNDS + 1) * 3 * (ROUND_SECONDS + 1) + 180);

async function main() {
  const host = machine();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cms-bench-rl-'));
  const seeded = await seedDatabase(path.join(dataDir, 'cms.sqlite'), PAGES);
  const headers = { authorization: `Basic ${Buffer.from(`${seeded.apiId}:${seeded.apiKey}`).toString('base64')}` };
  const span = seeded.lastId - seeded.firstId + 1;
  const makePath = () => `/api/page/${seeded.firstId + Math.floor(Math.random() * span)}`;

  const redisUrl = args.redis !== 'none' && (await redisAnswers(args.redis)) ? args.redis : undefined;
  if (args.redis !== 'none' && !redisUrl) console.log(`no Redis at ${args.redis}: measuring the in-process store only`);
  const prefix = `bench:${process.pid}:${Date.now()}:`;
  const variants: Array<{ key: string; env: Record<string, string> }> = [
    { key: 'off', env: { RATE_LIMIT_API: '0' } },
    { key: 'memory', env: { RATE_LIMIT_API: QUOTA } },
    ...(redisUrl ? [{ key: 'redis', env: { RATE_LIMIT_API: QUOTA, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix } }] : []),
  ];
  const servers = new Map<string, Server>();
  for (const v of variants) servers.set(v.key, await startServer('app-server.js', { ...appEnv(dataDir), ...v.env }));
  // Each server answers as it should before it is measured: limited ones announce the policy.
  for (const v of variants) {
    const answer = await fetch(servers.get(v.key)!.url + makePath(), { headers });
    const policy = answer.headers.get('ratelimit-policy');
    if (answer.status !== 200 || (v.key === 'off') !== (policy === null)) throw new Error(`${v.key}: ${answer.status}, policy ${policy}`);
  }
  console.log(
    `seeded ${PAGES} pages; ${variants.map((v) => v.key).join(', ')}; ${ROUNDS} rounds of ${ROUND_SECONDS} s each per server, ${CONNECTIONS} connections, order rotated per round`,
  );

  type Round = Loaded & { cpuMicrosPerRequest: number };
  const runs = new Map<string, Round[]>(variants.map((v) => [v.key, []]));
  // One warm-up round, not counted: JIT, SQLite page cache, Redis connection.
  for (const v of variants) await load(servers.get(v.key)!, { connections: CONNECTIONS, seconds: ROUND_SECONDS, makePath, headers });
  for (let round = 0; round < ROUNDS; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
    const line: string[] = [];
    for (const v of order) {
      const server = servers.get(v.key)!;
      const cpuBefore = cpuSeconds(server.child.pid!);
      const result = await load(server, { connections: CONNECTIONS, seconds: ROUND_SECONDS, makePath, headers });
      const cpuMicrosPerRequest = ((cpuSeconds(server.child.pid!) - cpuBefore) * 1e6) / result.requests;
      runs.get(v.key)!.push({ ...result, cpuMicrosPerRequest });
      line.push(`${v.key} ${result.reqPerSec.toFixed(0)} (${cpuMicrosPerRequest.toFixed(0)} µs)`);
    }
    console.log(`  round ${String(round + 1).padStart(2)}: ${line.join(', ')} req/s (CPU per request)`);
  }
  for (const server of servers.values()) await stopServer(server);

  const off = runs.get('off')!;
  const summary = variants.map((v) => {
    const measured = runs.get(v.key)!;
    const ratios = measured.map((r, i) => r.reqPerSec / off[i]!.reqPerSec);
    // CPU per request of "off" over this server's: the throughput ratio a CPU-bound server would have.
    const cpuRatios = measured.map((r, i) => off[i]!.cpuMicrosPerRequest / r.cpuMicrosPerRequest);
    return {
      server: v.key,
      medianReqPerSec: median(measured.map((r) => r.reqPerSec)),
      medianP99Ms: median(measured.map((r) => r.p99Ms)),
      medianCpuMicrosPerRequest: median(measured.map((r) => r.cpuMicrosPerRequest)),
      medianRatioToOff: median(ratios),
      medianCpuRatioToOff: median(cpuRatios),
      ratios: ratios.map((r) => Number(r.toFixed(3))),
      cpuRatios: cpuRatios.map((r) => Number(r.toFixed(3))),
      non2xx: measured.reduce((n, r) => n + r.non2xx + r.errors, 0),
    };
  });
  console.log(`\nGET /api/page/<random id>, median of ${ROUNDS} rounds`);
  console.log('  server    req/s   p99 ms   on/off   CPU µs/req   on/off by CPU   non-2xx');
  for (const s of summary) {
    console.log(
      `  ${s.server.padEnd(7)}${s.medianReqPerSec.toFixed(0).padStart(8)}${s.medianP99Ms.toFixed(1).padStart(9)}${s.medianRatioToOff.toFixed(3).padStart(9)}${s.medianCpuMicrosPerRequest.toFixed(0).padStart(13)}${s.medianCpuRatioToOff.toFixed(3).padStart(16)}${String(s.non2xx).padStart(10)}`,
    );
  }
  const targets = summary
    .filter((s) => s.server !== 'off')
    .flatMap((s) => [
      { target: `limiter (${s.server}) costs ≤ 5 % of GET-by-id req/s`, cost: 1 - s.medianRatioToOff },
      { target: `limiter (${s.server}) costs ≤ 5 %, by CPU per request`, cost: 1 - s.medianCpuRatioToOff },
    ])
    .map(({ target, cost }) => ({ target, value: `${(cost * 100).toFixed(1)} %`, pass: cost <= MAX_COST }));
  console.log('\nTargets');
  for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'MISS'}  ${t.target.padEnd(52)} ${t.value}`);

  const report = {
    date: new Date().toISOString(),
    machine: { ...host, loadAverageAtEnd: loadAverage() },
    settings: { pages: PAGES, connections: CONNECTIONS, rounds: ROUNDS, roundSeconds: ROUND_SECONDS, redis: Boolean(redisUrl) },
    summary,
    targets,
  };
  const file = path.join(benchDir, 'ratelimit-results.json');
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwrote ${path.relative(process.cwd(), file)}`);
  rmSync(dataDir, { recursive: true, force: true });
}

await main();
