#!/usr/bin/env node
// Runs every compiled test file (dist/src/**/*.test.js, dist/test/**/*.test.js) with node's test
// runner, passing any further arguments on (e.g. --test-reporter=dot).
//
// The files are named one by one because `node --test DIR` means different things across the
// supported Node versions: Node 20 searches the folder, Node 22 and later read each argument as a
// glob pattern and find nothing in a bare folder name (which Node 20 does not expand).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';

function testFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.js'))
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name))
    .sort();
}

const files = ['dist/src', 'dist/test'].flatMap((dir) => testFiles(dir));
if (files.length === 0) {
  console.error('No compiled tests in dist/: run `npm run build` first.');
  process.exit(1);
}
const args = process.argv.slice(2);
const given = (option) => args.some((arg) => arg.startsWith(option));
const reporter = given('--test-reporter') ? [] : ['--test-reporter=spec'];
// Files run side by side, as many as the machine has cores and at least two: node's own default
// (cores - 1) runs one at a time on a 2-core machine, where most files spend their time waiting on
// a child process, a browser, a timer or the database. On the 2-core CI machine the SQLite suite
// took 5m29s one at a time, 3m29s two at a time and 3m18s three at a time (the PostgreSQL suite
// 4m48s two at a time); every test passed in each. `--test-concurrency=N` overrides it.
const concurrency = given('--test-concurrency') ? [] : [`--test-concurrency=${Math.max(2, availableParallelism())}`];
const result = spawnSync(process.execPath, ['--test', ...reporter, ...concurrency, ...args, ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
