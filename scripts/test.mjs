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
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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

// The reporters asked for (spec by default), each to stdout unless destinations were given, and
// the running-tests reporter beside them (scripts/running-tests.mjs).
const state = process.env.CMS_TEST_RUNNING_FILE || path.join(mkdtempSync(path.join(tmpdir(), 'cms-tests-')), 'running.json');
const asked = passed.filter((arg) => arg.startsWith('--test-reporter='));
const reporters = given('--test-reporter-destination')
  ? []
  : [
      ...(asked.length ? asked : ['--test-reporter=spec']).flatMap((r) => [r, '--test-reporter-destination=stdout']),
      `--test-reporter=${fileURLToPath(new URL('./running-tests.mjs', import.meta.url))}`,
      // A file, not /dev/null: Node 22 fsyncs a reporter's destination at the end, which /dev/null refuses.
      `--test-reporter-destination=${state}.out`,
    ];
const rest = given('--test-reporter-destination') ? passed : passed.filter((arg) => !arg.startsWith('--test-reporter='));
// Files run side by side, as many as the machine has cores and at least two: node's own default
// (cores - 1) runs one at a time on a 2-core machine, where most files spend their time waiting on
// a child process, a browser, a timer or the database. On the 2-core CI machine the SQLite suite
// took 5m29s one at a time, 3m29s two at a time and 3m18s three at a time (the PostgreSQL suite
// 4m48s two at a time); every test passed in each. `--test-concurrency=N` overrides it.
const concurrency = given('--test-concurrency') ? [] : [`--test-concurrency=${Math.max(2, availableParallelism())}`];
// Its own process group, so that stopping it stops every file's process with it.
const child = spawn(process.execPath, ['--test', ...reporters, ...concurrency, ...rest, ...chosen], {
  stdio: 'inherit',
  detached: true,
  // --unit runs on SQLite whatever the environment says.
  env: {
    // Every test file is a process of its own, and many start servers or the CLI as processes: with
    // node's compile cache (in the temporary folder, kept between runs) each compiles the modules
    // it loads once, not once per process. Node versions without it ignore the variable.
    NODE_COMPILE_CACHE: path.join(tmpdir(), 'cms-test-compile-cache'),
    ...process.env,
    CMS_TEST_RUNNING_FILE: state,
    ...(unit ? { TEST_DATABASE_URL: '' } : {}),
  },
});

/** The tests still running, each with how long it has run, deepest last within its file. */
function stillRunning() {
  let list = [];
  try {
    list = JSON.parse(readFileSync(state, 'utf8'));
  } catch {
    // No test had started.
  }
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
  console.error(`\n${why}. ${running.length ? 'Still running:' : 'No test was running.'}\n${running.join('\n')}`);
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
}
const timer =
  deadlineSeconds > 0
    ? setTimeout(() => stop(`The suite ran past its deadline of ${deadlineSeconds} s`), deadlineSeconds * 1000)
    : undefined;
timer?.unref();
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => stop(`Stopped by ${signal}`));
child.on('exit', (code) => {
  clearTimeout(timer);
  if (!process.env.CMS_TEST_RUNNING_FILE) rmSync(path.dirname(state), { recursive: true, force: true });
  process.exit(stopped ? 1 : (code ?? 1));
});
