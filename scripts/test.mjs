#!/usr/bin/env node
// Runs every compiled test file (dist/src/**/*.test.js, dist/test/**/*.test.js) with node's test
// runner, passing any further arguments on (e.g. --test-reporter=dot).
//
// `--deadline=SECONDS` (or TEST_DEADLINE_SECONDS): a suite still running then is stopped, and the
// tests still running are listed with how long each has run, instead of each file's process
// dying mid-test with "Promise resolution is still pending". The same list is printed when this
// script is sent SIGTERM or SIGINT (a CI step's `timeout`). `--unit`: only the files that start no
// server process, browser or database server of their own and need no PostgreSQL (*.process.test,
// *.browser.test and the end-to-end files are left out), for use while working.
//
// The files are named one by one because `node --test DIR` means different things across the
// supported Node versions: Node 20 searches the folder, Node 22 and later read each argument as a
// glob pattern and find nothing in a bare folder name (which Node 20 does not expand).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function testFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.js'))
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name))
    .sort();
}

const files = ['dist/src', 'dist/test'].flatMap((dir) => testFiles(dir));
if (files.length === 0 && !process.argv.slice(2).some((arg) => /\.m?js$/.test(arg))) {
  console.error('No compiled tests in dist/: run `npm run build` first.');
  process.exit(1);
}
const UNIT_EXCLUDED =
  /\.(process|browser)\.test\.js$|\/(fuzz|fuzz\.oauth|mcp\.e2e|oauth\.e2e|mcp\.cimd|server\.stall|original-client)\.test\.js$/;

const args = process.argv.slice(2);
const option = (name) => args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const unit = args.includes('--unit');
const deadlineSeconds = Number(option('deadline') ?? process.env.TEST_DEADLINE_SECONDS ?? 0);
// Test files named on the command line run instead of the whole suite.
const named = args.filter((arg) => !arg.startsWith('-') && /\.m?js$/.test(arg));
const passed = args.filter((arg) => arg !== '--unit' && !arg.startsWith('--deadline=') && !named.includes(arg));
const given = (prefix) => passed.some((arg) => arg.startsWith(prefix));
const chosen = named.length ? named : unit ? files.filter((file) => !UNIT_EXCLUDED.test(file)) : files;

// How the files run. By default in shards: each shard is one `node --test` process that runs its
// files one after another inside it (test isolation "none"), and the shards run side by side,
// twice as many as the machine has cores, as most files spend much of their time waiting on a
// child process, a browser, a timer or the database. A process of its own for every file (node's
// default) loaded the app and compiled its schemas once per file: over the suite that was more than
// half of all the CPU time the tests took (bench/README.md). So test files share their process
// with others: one must leave nothing behind (servers, timers, environment variables, mocks) that
// would change another, as it must already between the tests of one file. `--test-isolation=process`
// gives every file its process again, to tell whether a failure comes from sharing; `--shards=N`
// sets the number of shards.
const isolated = given('--test-isolation') || given('--experimental-test-isolation');
const shardCount = isolated ? 1 : Math.max(1, Math.min(chosen.length, Number(option('shards') ?? 2 * availableParallelism())));

// The shards are balanced by how long each file took in this machine's last run of the same
// database's suite (kept in the temporary folder, as the compile cache is): the longest file goes
// to the shard with the least work so far. A file not measured yet counts as the median of those
// measured; with none measured, a file that starts servers or a browser counts as ten others.
const database = !unit && process.env.TEST_DATABASE_URL ? 'postgres' : 'sqlite';
const timingsFile = path.join(tmpdir(), 'cms-test-timings', `${database}.json`);
function readTimings() {
  try {
    return JSON.parse(readFileSync(timingsFile, 'utf8'));
  } catch {
    return {}; // None measured yet here.
  }
}
const timings = readTimings();
/** A file's key in the timings: its path from the working folder. */
const keyOf = (file) => path.relative(process.cwd(), path.resolve(file));
const measured = chosen
  .map((file) => timings[keyOf(file)])
  .filter(Number.isFinite)
  .sort((a, b) => a - b);
const costOf = (file) => timings[keyOf(file)] ?? measured[Math.floor(measured.length / 2)] ?? (UNIT_EXCLUDED.test(file) ? 10 : 1);
const shards = Array.from({ length: shardCount }, () => ({ files: [], cost: 0 }));
for (const file of [...chosen].sort((a, b) => costOf(b) - costOf(a) || a.localeCompare(b))) {
  const least = shards.reduce((a, b) => (b.cost < a.cost ? b : a));
  least.files.push(file);
  least.cost += costOf(file);
}
for (const shard of shards) shard.files.sort();
/** Keeps the times this run measured (scripts/running-tests.mjs) for the next run's shards. */
function keepTimings() {
  const took = { ...readTimings() };
  for (const shard of shards.keys()) {
    try {
      for (const [file, ms] of Object.entries(JSON.parse(readFileSync(`${stateOf(shard)}.times`, 'utf8')))) {
        // Only the working folder's files: not a test's fixtures elsewhere.
        if (!keyOf(file).startsWith('..')) took[keyOf(file)] = Math.round(ms);
      }
    } catch {
      // This shard was stopped before its reporter wrote the times.
    }
  }
  mkdirSync(path.dirname(timingsFile), { recursive: true });
  writeFileSync(`${timingsFile}.${process.pid}`, JSON.stringify(took));
  renameSync(`${timingsFile}.${process.pid}`, timingsFile);
}

// The reporters asked for (spec by default), each to stdout unless destinations were given, and
// the running-tests reporter beside them (scripts/running-tests.mjs), which keeps each shard's
// running tests in a file of its own.
const state = process.env.CMS_TEST_RUNNING_FILE || path.join(mkdtempSync(path.join(tmpdir(), 'cms-tests-')), 'running.json');
const stateOf = (shard) => (shard === 0 ? state : `${state}.${shard}`);
const asked = passed.filter((arg) => arg.startsWith('--test-reporter='));
const reporters = (shard) =>
  given('--test-reporter-destination')
    ? []
    : [
        ...(asked.length ? asked : ['--test-reporter=spec']).flatMap((r) => [r, '--test-reporter-destination=stdout']),
        `--test-reporter=${fileURLToPath(new URL('./running-tests.mjs', import.meta.url))}`,
        // A file, not /dev/null: Node 22 fsyncs a reporter's destination at the end, which /dev/null refuses.
        `--test-reporter-destination=${stateOf(shard)}.out`,
      ];
const rest = passed.filter(
  (arg) => !arg.startsWith('--shards=') && (given('--test-reporter-destination') || !arg.startsWith('--test-reporter=')),
);
// With every file in a process of its own, files run side by side, as many as the machine has
// cores and at least two (node's own default, cores - 1, runs one at a time on two cores).
// `--test-concurrency=N` overrides it.
const concurrency = !isolated || given('--test-concurrency') ? [] : [`--test-concurrency=${Math.max(2, availableParallelism())}`];
const env = {
  // Many tests start servers or the CLI as processes: with node's compile cache (in the temporary
  // folder, kept between runs) each compiles the modules it loads once, not once per process. Node versions without it ignore the variable.
  NODE_COMPILE_CACHE: path.join(tmpdir(), 'cms-test-compile-cache'),
  ...process.env,
  // --unit runs on SQLite whatever the environment says.
  ...(unit ? { TEST_DATABASE_URL: '' } : {}),
};
const began = Date.now();
// Each shard in its own process group, so that stopping it stops every process it started. A
// shard's report is printed whole when it ends, so that the reports of shards running side by
// side are not interleaved; one shard streams as it goes.
const children = shards.map(({ files }, shard) => {
  const isolation = isolated ? [] : ['--experimental-test-isolation=none'];
  const child = spawn(process.execPath, ['--test', ...isolation, ...reporters(shard), ...concurrency, ...rest, ...files], {
    stdio: ['inherit', shardCount === 1 ? 'inherit' : 'pipe', shardCount === 1 ? 'inherit' : 'pipe'],
    detached: true,
    env: { ...env, CMS_TEST_RUNNING_FILE: stateOf(shard) },
  });
  const output = [];
  child.stdout?.on('data', (chunk) => output.push(chunk));
  child.stderr?.on('data', (chunk) => output.push(chunk));
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  return { child, files, shard, output, exited };
});
const reported = new Set();
function report({ shard, files, output }, code) {
  if (reported.has(shard) || shardCount === 1) return;
  reported.add(shard);
  const outcome = code === undefined ? 'stopped' : code === 0 ? 'passed' : `failed (exit ${code})`;
  const seconds = Math.round((Date.now() - began) / 1000);
  process.stdout.write(`\n── shard ${shard + 1} of ${shardCount} (${files.length} files): ${outcome} after ${seconds} s\n`);
  const text = Buffer.concat(output).toString();
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** The tests still running, each with how long it has run, deepest last within its file. */
function stillRunning() {
  const list = shards.flatMap((_, shard) => {
    try {
      return JSON.parse(readFileSync(stateOf(shard), 'utf8'));
    } catch {
      return []; // No test of this shard had started.
    }
  });
  const now = Date.now();
  return list
    .filter((t) => t.file !== t.name && !t.file.endsWith(`/${t.name}`))
    .sort((a, b) => a.file.localeCompare(b.file) || a.nesting - b.nesting)
    .map(
      (t) =>
        `  ${path.relative(process.cwd(), t.file)}: ${'  '.repeat(t.nesting)}${t.name} (running for ${Math.round((now - t.since) / 1000)} s)`,
    );
}

let stopped = false;
function stop(why) {
  if (stopped) return;
  stopped = true;
  const running = stillRunning();
  for (const run of children) {
    try {
      process.kill(-run.child.pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
    report(run, undefined);
  }
  console.error(`\n${why}. ${running.length ? 'Still running:' : 'No test was running.'}\n${running.join('\n')}`);
  finish(1);
}
function finish(code) {
  if (!isolated) keepTimings();
  if (!process.env.CMS_TEST_RUNNING_FILE) rmSync(path.dirname(state), { recursive: true, force: true });
  process.exit(code);
}
const timer =
  deadlineSeconds > 0
    ? setTimeout(() => stop(`The suite ran past its deadline of ${deadlineSeconds} s`), deadlineSeconds * 1000)
    : undefined;
timer?.unref();
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => stop(`Stopped by ${signal}`));
const codes = await Promise.all(
  children.map(async (run) => {
    const code = await run.exited;
    if (!stopped) report(run, code);
    return code;
  }),
);
if (!stopped) {
  clearTimeout(timer);
  const failed = codes.filter((code) => code !== 0).length;
  if (shardCount > 1) {
    console.log(
      `\n${chosen.length} test files in ${shardCount} shards: ${failed ? `${failed} shards failed` : 'all passed'}, in ${Math.round((Date.now() - began) / 1000)} s`,
    );
  }
  finish(failed ? 1 : 0);
}
