import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { watch } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { packageFileAbove } from '../src/reference/package-version.js';

/** scripts/test.mjs, which `npm test` runs after its build. */
const ROOT = path.dirname(packageFileAbove(import.meta.url));
const SCRIPT = path.join(ROOT, 'scripts', 'test.mjs');

test('a suite stopped while a test hangs lists the test still running, with how long it has run, and exits 1', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cms-test-script-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const fixture = path.join(dir, 'hangs.test.mjs');
  writeFileSync(
    fixture,
    `import { test } from 'node:test';
test('finishes', () => {});
test('outer', async (t) => {
  await t.test('waits for ever', () => {
    return new Promise(() => setInterval(() => {}, 1000));
  });
});
`,
  );
  // Without NODE_TEST_CONTEXT, which this file's runner set: the suite's runner would take itself
  // for one of its children and report in its wire format instead of text.
  const { NODE_TEST_CONTEXT: _context, ...env } = process.env;
  // The file where the suite keeps its running tests, named here so that this test can see when
  // the hanging one has started.
  const running = path.join(dir, 'running.json');
  const child = spawn(process.execPath, [SCRIPT, '--test-reporter=spec', fixture], {
    cwd: ROOT,
    env: { ...env, CMS_TEST_RUNNING_FILE: running },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = once(child, 'exit');
  const started = () => existsSync(running) && readFileSync(running, 'utf8').includes('waits for ever');
  // The watch starts long before the suite's runner has loaded, let alone run a test.
  if (!started()) for await (const _ of watch(dir)) if (started()) break;
  // The hanging test has started: now the suite is stopped, as a CI step's timeout stops it.
  child.kill('SIGTERM');
  const [code] = await exited;
  assert.equal(code, 1);
  assert.match(output, /Stopped by SIGTERM\. Still running:/);
  assert.match(output, /hangs\.test\.mjs: outer \(running for \d+ s\)/);
  assert.match(output, /hangs\.test\.mjs: {3}waits for ever \(running for \d+ s\)/);
  assert.doesNotMatch(output.slice(output.indexOf('Still running:')), /finishes/, 'a finished test is not listed');
});

/** Runs scripts/test.mjs in `dir` (on the fixture files `args` name), with `dir/tmp` as its temporary folder. */
async function runSuite(dir: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const { NODE_TEST_CONTEXT: _context, CMS_TEST_RUNNING_FILE: _running, ...env } = process.env;
  const child = spawn(process.execPath, [SCRIPT, ...args], {
    cwd: dir,
    env: { ...env, TMPDIR: path.join(dir, 'tmp'), TEST_DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const [code] = await once(child, 'exit');
  return { code, output };
}

test("a suite keeps each file's time, and the next run's shards are balanced by those times, not by count", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cms-test-script-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, 'tmp'));
  const names = ['a', 'b', 'c', 'd'].map((name) => `${name}.test.mjs`);
  for (const name of names) writeFileSync(path.join(dir, name), `import { test } from 'node:test';\ntest('${name}', () => {});\n`);
  const timings = path.join(dir, 'tmp', 'cms-test-timings', 'sqlite.json');

  const first = await runSuite(dir, ['--shards=2', '--test-reporter=dot', ...names]);
  assert.equal(first.code, 0, first.output);
  // Nothing measured yet: two files a shard.
  assert.match(first.output, /shard 1 of 2 \(2 files\)/);
  assert.match(first.output, /shard 2 of 2 \(2 files\)/);
  const kept = JSON.parse(readFileSync(timings, 'utf8'));
  assert.deepEqual(Object.keys(kept).sort(), names);
  for (const name of names) assert.ok(Number.isInteger(kept[name]) && kept[name] >= 0, `${name}: ${kept[name]}`);

  // As if a.test.mjs had taken as long as the other three together and more: it gets a shard of
  // its own, and the other three share the other.
  writeFileSync(timings, JSON.stringify({ 'a.test.mjs': 100_000, 'b.test.mjs': 90_000, 'c.test.mjs': 5_000, 'd.test.mjs': 1_000 }));
  const second = await runSuite(dir, ['--shards=2', '--test-reporter=spec', ...names]);
  assert.equal(second.code, 0, second.output);
  // Each shard's report follows its heading; the spec reporter names each test.
  const reports = second.output.split('── shard ').slice(1);
  const alone = reports.find((r) => /^\d of 2 \(1 files\)/.test(r));
  const shared = reports.find((r) => /^\d of 2 \(3 files\)/.test(r));
  assert.ok(alone && shared, second.output);
  assert.match(alone, /a\.test\.mjs/);
  for (const name of ['b', 'c', 'd']) assert.match(shared, new RegExp(`${name}\\.test\\.mjs`));
});
