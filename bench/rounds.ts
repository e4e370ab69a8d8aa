/**
 * Interleaved measurement: two or more servers (or one server with different credentials) loaded
 * in short alternating rounds, so a change in the machine's load falls on all of them alike, and
 * the result is the median of per-round ratios rather than the ratio of two separate runs.
 * Importing this module runs nothing.
 */
import { readFileSync } from 'node:fs';
import type { Request as CannonRequest } from 'autocannon';
import { type Loaded, load, type Server } from './harness.js';

/** A server and what it is loaded with: GETs of `makePath`, or `requests` (writes, with their bodies). */
export interface Contender {
  key: string;
  server: Server;
  makePath?: () => string;
  requests?: CannonRequest[];
  headers?: Record<string, string>;
  /** Where its client runs (harness.ts, LoadOptions.client). */
  client?: 'inline' | 'process' | 'wrk';
}

export interface RoundsOptions {
  rounds: number;
  /** Seconds of load per contender per round. */
  seconds: number;
  /** Seconds of unmeasured load per contender before the first round. */
  warmUp: number;
  connections: number;
}

/** A contender over all its rounds: medians of the rates and latencies, worst p99 and RSS, summed counts. */
export interface Summary {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  worstP99Ms: number;
  maxRssMB: number;
  /** Peak RssAnon over the rounds (harness.ts, Measured.maxAnonMB). */
  maxAnonMB: number;
  requests: number;
  failed: number;
  rounds: number[];
  /**
   * Median over the rounds of the server's CPU time per request (µs). Steadier than req/s where
   * the machine's speed moves from round to round: it is the work a request costs, whatever the
   * wait for a core (bench/README.md, 2026-11-25).
   */
  cpuUsPerRequest: number;
  /** Median over the rounds of the load generator's CPU time per request (µs), where it is measured (wrk); else NaN. */
  clientCpuUsPerRequest: number;
}

export const median = (values: number[]): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/**
 * CPU seconds a process and its live child processes have used (user + system, /proc/<pid>/stat,
 * 100 ticks a second): a cluster's primary with its workers.
 */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  let seconds = (Number(fields[11]) + Number(fields[12])) / 100;
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  for (const child of children ? children.split(' ') : []) {
    try {
      seconds += cpuSeconds(Number(child));
    } catch {
      // Exited since it was listed.
    }
  }
  return seconds;
}

/**
 * Waits until the server has finished what the last load left in flight (up to 32 lists of 999
 * take seconds), so that backlog does not eat into the next contender's round: idle means under
 * 10 ms of CPU in 100 ms. Bounded at 15 s.
 */
export async function settle(server: Server): Promise<void> {
  const pid = server.child.pid!;
  const until = performance.now() + 15_000;
  let last = cpuSeconds(pid);
  while (performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = cpuSeconds(pid);
    if (now - last <= 0.01) return;
    last = now;
  }
}

/**
 * A warm-up for each contender, then `rounds` rounds in which each is loaded in turn, the order
 * reversed every round (A B, B A, A B…). Returns every contender's runs, round by round.
 */
export async function interleave(contenders: Contender[], options: RoundsOptions): Promise<Record<string, Loaded[]>> {
  const run = async (c: Contender, seconds: number): Promise<Loaded> => {
    const cpuBefore = cpuSeconds(c.server.child.pid!);
    const loaded = await load(c.server, {
      connections: options.connections,
      seconds,
      makePath: c.makePath,
      requests: c.requests,
      headers: c.headers ?? {},
      ...(c.client ? { client: c.client } : {}),
    });
    await settle(c.server);
    const cpuUs = (cpuSeconds(c.server.child.pid!) - cpuBefore) * 1e6;
    return { ...loaded, cpuUsPerRequest: loaded.requests > 0 ? cpuUs / loaded.requests : Number.NaN };
  };
  const runs: Record<string, Loaded[]> = Object.fromEntries(contenders.map((c) => [c.key, []]));
  for (const c of contenders) await run(c, options.warmUp);
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? contenders : [...contenders].reverse();
    for (const c of order) runs[c.key]!.push(await run(c, options.seconds));
  }
  return runs;
}

export function summarise(runs: Loaded[]): Summary {
  return {
    reqPerSec: median(runs.map((r) => r.reqPerSec)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    worstP99Ms: Math.max(...runs.map((r) => r.p99Ms)),
    maxRssMB: Math.max(...runs.map((r) => r.maxRssMB)),
    maxAnonMB: Math.max(...runs.map((r) => r.maxAnonMB ?? 0)),
    requests: runs.reduce((sum, r) => sum + r.requests, 0),
    failed: runs.reduce((sum, r) => sum + r.non2xx + r.errors, 0),
    rounds: runs.map((r) => Math.round(r.reqPerSec)),
    cpuUsPerRequest: median(runs.map((r) => r.cpuUsPerRequest ?? Number.NaN).filter(Number.isFinite)),
    clientCpuUsPerRequest: median(runs.map((r) => r.clientCpuUsPerRequest ?? Number.NaN).filter(Number.isFinite)),
  };
}

/** The median over rounds of a's req/s divided by b's in the same round (a round in which b answered nothing is left out). */
export function medianRatio(a: Loaded[], b: Loaded[]): number {
  return median(roundRatios(a, b));
}

/** Each round's a req/s over b's, in order: their spread says how far the median can be trusted. */
export function roundRatios(a: Loaded[], b: Loaded[]): number[] {
  return a.map((run, i) => run.reqPerSec / b[i]!.reqPerSec).filter(Number.isFinite);
}

const pad = (n: number, digits = 0) => n.toFixed(digits).padStart(9);

/** One row a contender: median req/s, p50, p99 (median and worst over rounds), CPU per request, peak RSS, failures. */
export function printSummaries(rows: Array<[string, Summary]>, nameWidth = 10): void {
  console.log(`  ${'server'.padEnd(nameWidth + 6)}req/s   p50 ms   p99 ms  worst p99  CPU µs/req   RSS MB  anon MB   requests   failed`);
  for (const [name, s] of rows) {
    console.log(
      `  ${name.padEnd(nameWidth)}${pad(s.reqPerSec)}${pad(s.p50Ms, 1)}${pad(s.p99Ms, 1)}${pad(s.worstP99Ms, 1).padStart(11)}${pad(s.cpuUsPerRequest).padStart(12)}${pad(s.maxRssMB)}${pad(s.maxAnonMB)}${pad(s.requests).padStart(11)}${pad(s.failed)}`,
    );
  }
}
