/**
 * Two sections on the page database the main bench seeded:
 *
 * - workers: the production command (`dist/src/server.js`) at `WORKERS=1` and at one worker per
 *   core, on the same SQLite file, in interleaved rounds of GET by id, the list of 200, the
 *   filtered list and page creates. The figure is the median over rounds of N workers' req/s over
 *   one's. The load generator runs on the same machine and takes a core of its own, so on two
 *   cores the second worker shares a core with it: the ratio is what this machine can show, not
 *   what a machine with a separate client would.
 * - tail: one app (app-server.ts) at 16 connections, the list of 200 and the filtered list, each
 *   round's p50 and p99, from autocannon in the runner's process, autocannon in a process of its
 *   own and wrk, in turn. A fair queue answers every request within a few service times of the
 *   median; the target is p99 ≤ 2 × p50 (the medians over rounds) as wrk sees it. Beside each,
 *   a control of one cost (tail-control.ts) in the same rounds shows what the machine allows.
 */
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Request as CannonRequest } from 'autocannon';
import { FILTERED, freshFilter } from './growth.js';
import { appEnv, forkTracked, here, type Loaded, type Server, startServer, stopProcess, stopServer } from './harness.js';
import { interleave, medianRatio, printSummaries, type RoundsOptions, roundRatios, type Summary, summarise } from './rounds.js';
import type { Seeded } from './seed.js';
import { pageWrites, posting } from './writes.js';

interface Target {
  section: string;
  target: string;
  value: string;
  pass: boolean;
}

export interface SectionOptions {
  dataDir: string;
  seeded: Seeded;
  pages: number;
  rounds: RoundsOptions;
  env: Record<string, string>;
  appFlags: string[];
  headers: Record<string, string>;
}

/** A port nothing listens on now, for a server that must be told its port (server.js reads PORT). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

/**
 * The production command with `workers` workers, ready once /readyz has answered from each of
 * them. Its `child` is the cluster's primary: CPU figures (rounds.ts) count its workers too.
 */
async function startCluster(o: SectionOptions, workers: number): Promise<Server> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = forkTracked(path.resolve(here, '../src/server.js'), {
    env: { ...process.env, ...appEnv(o.dataDir), ...o.env, PORT: String(port), HOST: '127.0.0.1', WORKERS: String(workers) },
    execArgv: o.appFlags,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const seen = new Set<number>();
  for (let tries = 0; seen.size < workers; tries++) {
    if (child.exitCode !== null) throw new Error(`server.js (WORKERS=${workers}) exited (${child.exitCode}) before it was ready`);
    if (tries > 600) {
      child.kill('SIGKILL');
      throw new Error(`server.js (WORKERS=${workers}): ${seen.size} of ${workers} workers ready after 600 tries`);
    }
    const worker = await readyWorker(port);
    if (worker === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
    else seen.add(worker);
  }
  return { url, child };
}

/**
 * The worker that answers /readyz on a connection of its own (a kept-alive one stays with the
 * worker that accepted it; 0 when the server runs no workers), or undefined while it is not ready.
 */
function readyWorker(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const request = http.get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () => resolve(response.statusCode === 200 ? ((JSON.parse(body) as { worker?: number }).worker ?? 0) : undefined));
    });
    request.on('error', () => resolve(undefined));
  });
}

/** SIGTERM, as an orchestrator stops it: the primary drains every worker. */
const stopCluster = (server: Server) => stopProcess(server, (child) => child.kill('SIGTERM'), 15_000);

function byId(seeded: Seeded) {
  const span = seeded.lastId - seeded.firstId + 1;
  return () => `/api/page/${seeded.firstId + Math.floor(Math.random() * span)}`;
}

function list200(pages: number) {
  return () => `/api/page?pageSize=200&offset=${Math.floor(Math.random() * Math.floor(pages / 200)) * 200}`;
}

/** Fresh pairs of clusters the workers section's rounds are spread over (see compare in run.ts: each process draws its memory's speed). */
const WORKER_PAIRS = 2;

export async function workersSection(o: SectionOptions): Promise<{ targets: Target[]; report: Record<string, unknown> }> {
  const workers = os.availableParallelism();
  const targets: Target[] = [];
  const report: Record<string, unknown> = { workers, pairs: WORKER_PAIRS };
  const writes = pageWrites(o.seeded);
  const scenarios: Array<{ key: string; title: string; read: boolean; makePath?: () => string; requests?: CannonRequest[] }> = [
    { key: 'getById', title: 'GET /api/page/:id (random id)', read: true, makePath: byId(o.seeded) },
    { key: 'list200', title: 'GET /api/page?pageSize=200 (random offset)', read: true, makePath: list200(o.pages) },
    { key: 'filtered', title: `GET ${FILTERED}`, read: true, makePath: () => FILTERED },
    { key: 'creates', title: 'POST /api/page', read: false, requests: posting(o.headers, writes.insert) },
  ];
  const runs = new Map(scenarios.map((s) => [s.key, { one: [] as Loaded[], many: [] as Loaded[] }]));
  const perPair = { ...o.rounds, rounds: Math.max(1, Math.round(o.rounds.rounds / WORKER_PAIRS)) };
  for (let pair = 0; pair < WORKER_PAIRS; pair++) {
    const one = await startCluster(o, 1);
    const many = await startCluster(o, workers).catch(async (error) => {
      await stopCluster(one);
      throw error;
    });
    try {
      for (const s of scenarios) {
        const load = {
          headers: o.headers,
          // Reads load from wrk: autocannon would take a core's worth of the machine for itself.
          ...(s.makePath ? { makePath: s.makePath, client: 'wrk' as const } : {}),
          ...(s.requests ? { requests: s.requests } : {}),
        };
        const pairRuns = await interleave(
          [
            { key: 'one', server: one, ...load },
            { key: 'many', server: many, ...load },
          ],
          perPair,
        );
        runs.get(s.key)!.one.push(...pairRuns.one!);
        runs.get(s.key)!.many.push(...pairRuns.many!);
      }
    } finally {
      await Promise.all([stopCluster(one), stopCluster(many)]);
    }
  }
  for (const s of scenarios) {
    const { one, many } = runs.get(s.key)!;
    const ratio = medianRatio(many, one);
    const ratios = roundRatios(many, one).map((r) => Number(r.toFixed(2)));
    const oneSummary = summarise(one);
    const manySummary = summarise(many);
    console.log(`\nworkers, ${s.title}: WORKERS=1 against WORKERS=${workers}, same SQLite file, ${WORKER_PAIRS} pairs of processes`);
    printSummaries([
      ['1 worker', oneSummary],
      [`${workers} workers`, manySummary],
    ]);
    console.log(`  ${workers}/1 ${ratio.toFixed(2)}× (rounds: ${ratios.join(' ')})`);
    const share = clientShare(workers, oneSummary, manySummary);
    if (share) {
      console.log(
        `  wrk ${share.clientUs.toFixed(0)} µs/req: the cores were ${share.busy.toFixed(2)} of ${workers} busy; with the client beside them at most ${share.bound.toFixed(2)}×, without it ${share.alone.toFixed(2)}×`,
      );
    }
    report[s.key] = { one: oneSummary, many: manySummary, ratio, ratios, ...(share ? { clientShare: share } : {}) };
    const failed = oneSummary.failed + manySummary.failed;
    targets.push({
      section: 'workers',
      target: s.read ? `${s.key}: ${workers} workers ≥ 1.7× one (median ratio)` : `${s.key}: ${workers} workers / one (reported)`,
      value: `${ratio.toFixed(2)}×`,
      pass: s.read ? ratio >= 1.7 : true,
    });
    if (share && s.read) {
      targets.push({
        section: 'workers',
        target: `${s.key}: the most ${workers} cores shared with the client allow, N·s1/(s1 + c) (reported)`,
        value: `${share.bound.toFixed(2)}×`,
        pass: true,
      });
    }
    targets.push({ section: 'workers', target: `${s.key}: every answer 2xx`, value: String(failed), pass: failed === 0 });
  }
  return { targets, report };
}

/**
 * What the machine lets the workers show when the load generator shares its cores, from CPU per
 * request: the server's at one worker (s1) and at N (sN), and the client's (c). N workers and the
 * client fill N cores at N / (sN + c) requests a second; one worker fills one core at 1 / s1. So:
 * - `busy`: the cores the servers and the client kept busy at N workers (N when the machine was full);
 * - `bound`: N·s1 / (s1 + c), the most N workers can show beside the client even at one worker's
 *   cost per request;
 * - `alone`: N·s1 / sN, what they would show with the client on a machine of its own.
 * Undefined where the client's CPU was not measured (autocannon).
 */
export function clientShare(workers: number, one: Summary, many: Summary) {
  const [s1, sN, c] = [one.cpuUsPerRequest, many.cpuUsPerRequest, many.clientCpuUsPerRequest];
  if (![s1, sN, c].every((v) => Number.isFinite(v) && v > 0)) return undefined;
  return {
    clientUs: c,
    busy: (many.reqPerSec * (sN + c)) / 1e6,
    bound: (workers * s1) / (s1 + c),
    alone: (workers * s1) / sN,
  };
}

/** The connections of the tail check: the figure the fairness target is stated at. */
const TAIL_CONNECTIONS = 16;

export async function tailSection(o: SectionOptions): Promise<{ targets: Target[]; report: Record<string, unknown> }> {
  const targets: Target[] = [];
  const report: Record<string, unknown> = {};
  const app = await startServer('app-server.js', { ...appEnv(o.dataDir), ...o.env }, o.appFlags);
  const options = { ...o.rounds, connections: TAIL_CONNECTIONS };
  try {
    for (const s of [
      { key: 'list200', title: 'GET /api/page?pageSize=200 (random offset)', makePath: list200(o.pages) },
      { key: 'filtered', title: `GET ${FILTERED}`, makePath: () => FILTERED },
      // Kept lists answer the one above from what the server kept. These are windows of 48 filters:
      // most are slices of matches kept, a few a filter's first windows (its count, its matches),
      // ten or more times dearer. A fair queue still sends those to the p99, so the spread is
      // reported, not held to the target, which is stated for requests of one cost.
      {
        key: 'fresh',
        title: 'GET /api/page?pageSize=100&title=(a seed word)&matchType=contains&offset=(0–99)',
        makePath: freshFilter,
        mixed: true,
      },
    ]) {
      const mixed = 'mixed' in s;
      // Requests of one cost get a control beside the app (tail-control.ts): its bytes and its CPU
      // per answer, through the same queue, with nothing that varies.
      const control = mixed ? undefined : await startTailControl(o, app, s.key, s.makePath);
      try {
        // The same load from three clients in turn: autocannon in this process and in one of its
        // own, and wrk. The target is read from wrk: autocannon's own event loop reads the 16
        // answers of 700 KB in batches too, so its figures add its own wait to the server's.
        const contenders = (['inline', 'process', 'wrk'] as const).map((client) => ({
          key: client as string,
          server: app,
          makePath: s.makePath,
          headers: o.headers,
          client,
        }));
        if (control) contenders.push({ key: 'control', server: control.server, makePath: s.makePath, headers: {}, client: 'wrk' });
        const runs = await interleave(contenders, options);
        const inline = summarise(runs.inline!);
        const ownProcess = summarise(runs.process!);
        const summary = summarise(runs.wrk!);
        const spreadOf = (x: Summary) => ({ ...x, spread: x.p99Ms / x.p50Ms });
        const spread = spreadOf(summary).spread;
        const controlled = control && runs.control ? { ...spreadOf(summarise(runs.control)), workUs: control.workUs } : undefined;
        console.log(`\ntail, ${s.title} at ${TAIL_CONNECTIONS} connections: p99 / p50 ${spread.toFixed(2)} (wrk)`);
        if (controlled)
          console.log(
            `  the control (the app's ${controlled.workUs.toFixed(0)} µs of CPU an answer, the same bytes): p99 / p50 ${controlled.spread.toFixed(2)}`,
          );
        printSummaries(
          [
            ['autocannon inline', inline],
            ['autocannon process', ownProcess],
            ['wrk', summary],
            ...(controlled ? [['control, wrk', controlled] as [string, Summary]] : []),
          ],
          18,
        );
        report[s.key] = {
          ...summary,
          spread,
          inline: spreadOf(inline),
          ownProcess: spreadOf(ownProcess),
          ...(controlled ? { control: controlled } : {}),
        };
        targets.push({
          section: 'tail',
          target: `${s.key}: p99 ${mixed ? '/ p50' : '≤ 2 × p50'} at ${TAIL_CONNECTIONS} connections (medians of rounds, wrk)${mixed ? ' (reported)' : ''}`,
          value: `${summary.p99Ms.toFixed(1)} / ${summary.p50Ms.toFixed(1)} ms = ${spread.toFixed(2)}×`,
          pass: mixed || spread <= 2,
        });
        if (controlled)
          targets.push({
            section: 'tail',
            target: `${s.key}: the control's p99 / p50, the same bytes and CPU per answer (reported)`,
            value: `${controlled.p99Ms.toFixed(1)} / ${controlled.p50Ms.toFixed(1)} ms = ${controlled.spread.toFixed(2)}×`,
            pass: true,
          });
        const failed = summary.failed + inline.failed + ownProcess.failed;
        targets.push({ section: 'tail', target: `${s.key}: every answer 2xx`, value: String(failed), pass: failed === 0 });
      } finally {
        if (control) await stopServer(control.server);
      }
    }
  } finally {
    await stopServer(app);
  }
  return { targets, report };
}

/**
 * The tail's control for one request (tail-control.ts), with the app's answer to it saved. Its
 * spin is the app's CPU per answer less the control's own cost of sending those bytes, each read
 * from the last of two rounds of wrk at the tail's connections (the first of a fresh process is
 * dearer), so that an answer costs the control what it costs the app.
 */
async function startTailControl(o: SectionOptions, app: Server, key: string, makePath: () => string) {
  const answer = await fetch(`${app.url}${makePath()}`, { headers: o.headers });
  if (!answer.ok) throw new Error(`the tail's control: ${makePath()} answered ${answer.status}`);
  const body = path.join(o.dataDir, `tail-${key}.json`);
  await writeFile(body, Buffer.from(await answer.arrayBuffer()));
  const start = (workUs: number) => startServer('tail-control.js', { TAIL_BODY: body, TAIL_WORK_US: String(Math.round(workUs)) });
  const cpuPerAnswer = async (server: Server, headers: Record<string, string>) => {
    const runs = await interleave([{ key, server, makePath, headers, client: 'wrk' }], {
      ...o.rounds,
      connections: TAIL_CONNECTIONS,
      rounds: 2,
    });
    const us = runs[key]?.at(-1)?.cpuUsPerRequest ?? Number.NaN;
    if (!(us > 0)) throw new Error(`the tail's control: no CPU per answer measured for ${key}`);
    return us;
  };
  const appUs = await cpuPerAnswer(app, o.headers);
  const sendOnly = await start(0);
  const sendUs = await cpuPerAnswer(sendOnly, {}).finally(() => stopServer(sendOnly));
  return { server: await start(Math.max(0, appUs - sendUs)), workUs: appUs };
}
