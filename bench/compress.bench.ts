/**
 * What compression costs and saves (issue 11, point 4: "measure throughput and bytes with and
 * without"). One real app on a SQLite file of pages, 127.0.0.1 only; GET by id and lists of 200,
 * each asked for in identity, gzip and br (the same server: the encoding is the client's choice).
 * Short rounds, the encodings' order rotated every round, so a change in the machine's load falls
 * on all alike; the median of the rounds is the figure, for req/s and for the server's CPU time per
 * request, which a shared machine disturbs far less. Bytes per answer are read from raw answers
 * (not autocannon's counts), each decoded and compared with the identity body first. Then, in this
 * process, what each brotli quality and gzip level costs on one list of 200: why brotli quality 4 and gzip level 4.
 * `npm run bench:compress [-- --quick] [-- --rounds=N --round-seconds=S --pages=N]`.
 * A measurement, not a test: exits 0 unless it crashed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';
import { appEnv, benchDir, type Loaded, limitRun, load, loadAverage, machine, type Server, startServer, stopServer } from './harness.js';
import { cpuSeconds, median } from './rounds.js';
import { seedDatabase } from './seed.js';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    'round-seconds': { type: 'string' },
    pages: { type: 'string', default: '20000' },
  },
});
const ROUNDS = Number(args.rounds ?? (args.quick ? 2 : 6));
const ROUND_SECONDS = Number(args['round-seconds'] ?? (args.quick ? 2 : 3));
const CONNECTIONS = 32;
const PAGES = Number(args.pages);
const ENCODINGS = ['identity', 'gzip', 'br'] as const;
type Encoding = (typeof ENCODINGS)[number];
const SAMPLES = 40;
// Bounded: the rounds, one warm-up per scenario and encoding, seeding and the in-process table.
limitRun('compression bench', (ROUNDS + 1) * ENCODINGS.length * (3 * ROUND_SECONDS + 2) + 240);

const acceptFor = (encoding: Encoding): Record<string, string> => (encoding === 'identity' ? {} : { 'accept-encoding': encoding });

/** One GET with the bytes as they came over the wire (fetch would decode them). */
function rawGet(server: Server, pathname: string, headers: Record<string, string>) {
  return new Promise<{ status: number; encoding: string | undefined; body: Buffer }>((resolve, reject) => {
    const req = httpRequest(`${server.url}${pathname}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Waits until the requests a round left in flight are done: when autocannon stops, up to 32 lists
 * may still be in the server's hands, and the next round would start on a busy server.
 */
async function settle(server: Server): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 200));
  await rawGet(server, '/healthz', {});
}

function decode(encoding: string | undefined, body: Buffer): Buffer {
  if (encoding === 'br') return brotliDecompressSync(body);
  if (encoding === 'gzip') return gunzipSync(body);
  return body;
}

/** Average body bytes per answer in each encoding, over the same sample paths; every answer decodes to the identity body. */
async function bytesPerAnswer(server: Server, paths: string[], headers: Record<string, string>): Promise<Record<Encoding, number>> {
  const totals: Record<Encoding, number> = { identity: 0, gzip: 0, br: 0 };
  for (const pathname of paths) {
    const plain = await rawGet(server, pathname, headers);
    if (plain.status !== 200 || plain.encoding !== undefined) throw new Error(`${pathname}: ${plain.status} ${plain.encoding}`);
    totals.identity += plain.body.length;
    for (const encoding of ['gzip', 'br'] as const) {
      const packed = await rawGet(server, pathname, { ...headers, ...acceptFor(encoding) });
      if (packed.status !== 200 || packed.encoding !== encoding)
        throw new Error(`${pathname} in ${encoding}: ${packed.status} ${packed.encoding}`);
      if (!decode(packed.encoding, packed.body).equals(plain.body))
        throw new Error(`${pathname} in ${encoding} does not decode to the identity body`);
      totals[encoding] += packed.body.length;
    }
  }
  return { identity: totals.identity / paths.length, gzip: totals.gzip / paths.length, br: totals.br / paths.length };
}

/** Milliseconds and bytes of one compression of `body` at each setting, best of a few runs, in this process. */
function compressionCosts(body: Buffer) {
  const settings: Array<[string, (b: Buffer) => Buffer]> = [
    ...[1, 4, 5, 6, 11].map((q): [string, (b: Buffer) => Buffer] => [
      `br q${q}`,
      (b) =>
        brotliCompressSync(b, {
          params: { [constants.BROTLI_PARAM_QUALITY]: q, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT },
        }),
    ]),
    ...[1, 3, 4, 6, 9].map((level): [string, (b: Buffer) => Buffer] => [`gzip ${level}`, (b) => gzipSync(b, { level })]),
  ];
  return settings.map(([setting, compress]) => {
    let bytes = 0;
    let best = Number.POSITIVE_INFINITY;
    // Quality 11 takes a good part of a second on a list: fewer runs of it.
    const runs = setting === 'br q11' ? 2 : 5;
    for (let i = 0; i < runs; i++) {
      const start = performance.now();
      bytes = compress(body).length;
      best = Math.min(best, performance.now() - start);
    }
    return { setting, ms: Number(best.toFixed(2)), bytes, ratio: Number((bytes / body.length).toFixed(3)) };
  });
}

async function main() {
  const host = machine();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cms-bench-compress-'));
  const seeded = await seedDatabase(path.join(dataDir, 'cms.sqlite'), PAGES);
  const headers = { authorization: `Basic ${Buffer.from(`${seeded.apiId}:${seeded.apiKey}`).toString('base64')}` };
  const span = seeded.lastId - seeded.firstId + 1;
  const randomId = () => `/api/page/${seeded.firstId + Math.floor(Math.random() * span)}`;
  const list200 = () => `/api/page?pageSize=200&offset=${Math.floor(Math.random() * Math.floor(PAGES / 200)) * 200}`;
  // A list takes a hundred times as long as one record: its rounds are longer, so that each counts
  // enough answers (those still in flight when a round ends are not counted).
  const scenarios = [
    { key: 'getById', title: 'GET /api/page/<random id>', makePath: randomId, seconds: ROUND_SECONDS },
    { key: 'list200', title: 'GET /api/page?pageSize=200&offset=<random full page>', makePath: list200, seconds: 2 * ROUND_SECONDS },
  ];

  // The rate limiter is not what is measured here: off, or nearly every request would be a 429.
  const server = await startServer('app-server.js', { ...appEnv(dataDir), RATE_LIMIT_API: '0' });
  const bytes: Record<string, Record<Encoding, number>> = {};
  for (const s of scenarios) {
    const samples = Array.from({ length: s.key === 'getById' ? SAMPLES : SAMPLES / 4 }, s.makePath);
    bytes[s.key] = await bytesPerAnswer(server, samples, headers);
  }
  const listBody = (await rawGet(server, '/api/page?pageSize=200', headers)).body;
  console.log(
    `seeded ${PAGES} pages; one app server; ${ROUNDS} rounds of ${ROUND_SECONDS} s (lists ${2 * ROUND_SECONDS} s) per scenario and encoding, ${CONNECTIONS} connections, order rotated per round`,
  );

  type Round = Loaded & { cpuMicrosPerRequest: number };
  const runs = new Map<string, Round[]>();
  for (const s of scenarios) {
    // One warm-up per encoding, not counted: JIT, SQLite page cache, zlib.
    for (const e of ENCODINGS) {
      await load(server, { connections: CONNECTIONS, seconds: 1, makePath: s.makePath, headers: { ...headers, ...acceptFor(e) } });
      runs.set(`${s.key}/${e}`, []);
    }
  }
  for (let round = 0; round < ROUNDS; round++) {
    const line: string[] = [];
    for (const s of scenarios) {
      const order = ENCODINGS.map((_, i) => ENCODINGS[(i + round) % ENCODINGS.length]!);
      for (const e of order) {
        const cpuBefore = cpuSeconds(server.child.pid!);
        const result = await load(server, {
          connections: CONNECTIONS,
          seconds: s.seconds,
          makePath: s.makePath,
          headers: { ...headers, ...acceptFor(e) },
        });
        const cpuMicrosPerRequest = ((cpuSeconds(server.child.pid!) - cpuBefore) * 1e6) / result.requests;
        runs.get(`${s.key}/${e}`)!.push({ ...result, cpuMicrosPerRequest });
        line.push(`${s.key}/${e} ${result.reqPerSec.toFixed(0)}`);
        await settle(server);
      }
    }
    console.log(`  round ${String(round + 1).padStart(2)}: ${line.join(', ')} req/s`);
  }
  await stopServer(server);

  const summary = scenarios.flatMap((s) => {
    const identity = runs.get(`${s.key}/identity`)!;
    return ENCODINGS.map((e) => {
      const measured = runs.get(`${s.key}/${e}`)!;
      return {
        scenario: s.key,
        encoding: e,
        bytesPerAnswer: Math.round(bytes[s.key]![e]),
        bytesRatio: Number((bytes[s.key]![e] / bytes[s.key]!.identity).toFixed(3)),
        medianReqPerSec: Math.round(median(measured.map((r) => r.reqPerSec))),
        medianRatioToIdentity: Number(median(measured.map((r, i) => r.reqPerSec / identity[i]!.reqPerSec)).toFixed(3)),
        medianP99Ms: median(measured.map((r) => r.p99Ms)),
        medianCpuMicrosPerRequest: Math.round(median(measured.map((r) => r.cpuMicrosPerRequest))),
        maxRssMB: Math.round(Math.max(...measured.map((r) => r.maxRssMB))),
        non2xx: measured.reduce((n, r) => n + r.non2xx + r.errors, 0),
      };
    });
  });
  console.log(`\nMedian of ${ROUNDS} rounds (bytes: body per answer, averaged over sample answers)`);
  console.log('  scenario  encoding   bytes/answer   ×identity    req/s   ×identity   p99 ms   CPU µs/req   RSS MB   non-2xx');
  for (const r of summary) {
    console.log(
      `  ${r.scenario.padEnd(10)}${r.encoding.padEnd(9)}${String(r.bytesPerAnswer).padStart(14)}${r.bytesRatio.toFixed(3).padStart(12)}${String(r.medianReqPerSec).padStart(9)}${r.medianRatioToIdentity.toFixed(3).padStart(12)}${r.medianP99Ms.toFixed(1).padStart(9)}${String(r.medianCpuMicrosPerRequest).padStart(13)}${String(r.maxRssMB).padStart(9)}${String(r.non2xx).padStart(10)}`,
    );
  }

  if (summary.some((r) => r.non2xx > 0)) console.log('  WARNING: some answers were not 2xx: their req/s do not count');

  // What the settings cost on one list of 200, compressed here (not in the server), single-threaded.
  const costs = compressionCosts(listBody);
  console.log(`\nOne list of 200 (${listBody.length} bytes of JSON) compressed in this process, best of several runs`);
  console.log('  setting        ms       bytes   ×identity');
  for (const c of costs) {
    console.log(`  ${c.setting.padEnd(9)}${c.ms.toFixed(2).padStart(8)}${String(c.bytes).padStart(12)}${c.ratio.toFixed(3).padStart(12)}`);
  }

  const report = {
    date: new Date().toISOString(),
    machine: { ...host, loadAverageAtEnd: loadAverage() },
    settings: {
      pages: PAGES,
      connections: CONNECTIONS,
      rounds: ROUNDS,
      roundSeconds: ROUND_SECONDS,
      server: 'br quality 4, gzip level 4 (src/http/representation.ts)',
    },
    summary,
    listOf200: { identityBytes: listBody.length, costs },
  };
  const file = path.join(benchDir, 'compress-results.json');
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwrote ${path.relative(process.cwd(), file)}`);
  rmSync(dataDir, { recursive: true, force: true });
}

await main();
