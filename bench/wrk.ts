/**
 * wrk (Debian's package, C with LuaJIT) as the load generator, for the sections where the
 * client's own CPU decides the figure: on two cores, the workers section's second worker shares
 * a core with the client, and autocannon spends about as much CPU on a GET by id as the server
 * does. wrk spends a fraction of that, so more of the machine is left to the workers.
 *
 * The GET paths are drawn at random, per request, from the list it is given (a file its Lua
 * script reads); its figures come back as one JSON line the script's `done` prints. wrk's own CPU
 * per request is measured too (the shell that runs it prints its child's times): on a machine
 * whose cores the client shares with the server, it bounds what the server can be shown to do.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface WrkLoad {
  connections: number;
  seconds: number;
  headers: Record<string, string>;
  paths: string[];
}

// Each wrk thread runs the script in a Lua state of its own: every thread formats each path's
// request once, at its start (the headers given with -H are set by then), so a request costs a
// table look-up rather than a string built anew; and each seeds its own generator (setup numbers
// the threads), so no two threads draw the same sequence.
const SCRIPT = `
local requests = {}
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("seed", counter)
end
function init(args)
  for line in io.lines(os.getenv("WRK_PATHS")) do requests[#requests + 1] = wrk.format(nil, line) end
  math.randomseed(os.time() * 1000 + (seed or 0))
end
function request()
  return requests[math.random(#requests)]
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"non2xx":%d,"errors":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect + e.read + e.write + e.timeout))
end
`;

/** wrk's path, installed from Debian's packages on first use where it is missing (as root, or with sudo that asks nothing). */
export function ensureWrk(): string {
  const found = () => {
    try {
      return execFileSync('sh', ['-c', 'command -v wrk'], { encoding: 'utf8' }).trim();
    } catch {
      return '';
    }
  };
  const present = found();
  if (present) return present;
  const root = process.getuid?.() === 0;
  const apt = (...args: string[]) =>
    execFileSync(root ? 'apt-get' : 'sudo', root ? args : ['-n', 'apt-get', ...args], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  console.log("wrk is not installed: installing it from Debian's packages");
  try {
    apt('install', '-y', '-q', 'wrk');
  } catch {
    apt('update', '-q');
    apt('install', '-y', '-q', 'wrk');
  }
  const installed = found();
  if (!installed) throw new Error('wrk could not be installed (apt-get install wrk)');
  return installed;
}

/** What a run answered: the fields of harness.ts's Loaded that a client measures. */
export interface WrkFigures {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** wrk's own CPU time (user + system) per request, in µs. */
  clientCpuUsPerRequest: number;
}

/** The children's user and system times, as the last line of POSIX `times` prints them (`0m0.49s 0m1.41s`), in seconds. */
export function childTimes(printed: string): number | undefined {
  const last = printed.trim().split('\n').at(-1) ?? '';
  const match = /^(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s$/.exec(last.trim());
  if (!match) return undefined;
  const [, um, us, sm, ss] = match.map(Number) as [number, number, number, number, number];
  return um * 60 + us + sm * 60 + ss;
}

/** One run of wrk against `url`, and its figures. */
export async function wrkLoad(url: string, o: WrkLoad): Promise<WrkFigures> {
  const wrk = ensureWrk();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cms-bench-wrk-'));
  try {
    writeFileSync(path.join(dir, 'paths.txt'), `${o.paths.join('\n')}\n`);
    writeFileSync(path.join(dir, 'load.lua'), SCRIPT);
    // One thread: it keeps up with every load here, and in the lab a second one cut the two
    // workers' GET by id by a fifth or more (two threads compete with two workers for two cores).
    const args = ['-t', '1', '-c', String(o.connections), '-d', `${o.seconds}s`, '--timeout', '30s', '-s', path.join(dir, 'load.lua')];
    for (const [name, value] of Object.entries(o.headers)) args.push('-H', `${name}: ${value}`);
    args.push(url);
    // sh runs wrk, then prints what its child cost (times); it exits with wrk's status.
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn('sh', ['-c', '"$0" "$@"; status=$?; times; exit $status', wrk, ...args], {
        env: { ...process.env, WRK_PATHS: path.join(dir, 'paths.txt') },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        out += chunk;
      });
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk exited (${code}): ${out}`))));
    });
    const line = output.split('\n').find((l) => l.startsWith('{"requests"'));
    if (!line) throw new Error(`wrk printed no figures: ${output}`);
    const f = JSON.parse(line) as { requests: number; durationUs: number; p50Us: number; p99Us: number; non2xx: number; errors: number };
    const clientSeconds = childTimes(output);
    return {
      reqPerSec: f.requests / (f.durationUs / 1e6),
      p50Ms: f.p50Us / 1000,
      p99Ms: f.p99Us / 1000,
      requests: f.requests,
      non2xx: f.non2xx,
      errors: f.errors,
      clientCpuUsPerRequest: clientSeconds !== undefined && f.requests > 0 ? (clientSeconds * 1e6) / f.requests : Number.NaN,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
