import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
