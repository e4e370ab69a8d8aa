import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { listening, type Started, start } from './server-process.js';

/** The server's grace period after SIGTERM (src/server.ts), and a margin for the test's own pace. */
const GRACE_MS = 20_000;
const MARGIN_MS = 5_000;

/**
 * Sends requests whose log lines (their long URL appears in "incoming request" and in the 404's)
 * total a few MB: more than the pipe, the test's unread stream buffer and the server's 2 MiB of
 * kept lines together. The flood as a whole has a limit, so a server that blocks cannot stall the
 * test; no request has one of its own, as on a busy machine a slow answer is not a blocked server.
 */
async function floodLogs(base: string, requests = 600, concurrency = 20): Promise<number> {
  const pad = 'a'.repeat(4000);
  const limit = AbortSignal.timeout(180_000);
  let answered = 0;
  let next = 0;
  const worker = async () => {
    while (next < requests && !limit.aborted) {
      const n = next++;
      try {
        const response = await fetch(`${base}/no-such-page/${n}?pad=${pad}`, { signal: limit });
        await response.arrayBuffer();
        answered++;
      } catch {
        // Counted as unanswered: the assertion on `answered` says whether the service kept up.
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return answered;
}

async function stalledServer(t: TestContext): Promise<Started> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-stall-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  // No demo data: nothing is printed at start, so stdout is left as the process got it.
  const server = await start(t, { DATA_DIR: dataDir, DEMO_DATA: 'false', LOG_LEVEL: 'debug' }, { stallStdout: true });
  await listening(server);
  return server;
}

function exitWithin(server: Started, ms: number) {
  // Not a wait for the exit but its limit: a process that never exits fails the test instead of hanging it.
  return Promise.race([server.exit, new Promise((resolve) => setTimeout(() => resolve('still running'), ms).unref())]);
}

/** Resolves once what the process wrote matches `pattern` (checked at each chunk it writes to stdout), or it exits. */
function untilOutput(server: Started, pattern: RegExp): Promise<unknown> {
  const stdout = server.child.stdout!;
  const matched = new Promise<void>((resolve) => {
    const check = () => {
      if (!pattern.test(server.output())) return;
      stdout.off('data', check);
      resolve();
    };
    stdout.on('data', check);
    check();
  });
  return Promise.race([matched, server.exit]);
}

test('SIGTERM ends the process within its grace period while nobody reads its stdout', async (t) => {
  const server = await stalledServer(t);
  assert.equal(await floodLogs(server.base), 600, 'requests are served while the log reader is stalled');
  server.child.kill('SIGTERM');
  // Code 0: the shutdown finished; when the grace period runs out the process exits with 1 (src/server.ts).
  assert.deepEqual(await exitWithin(server, GRACE_MS + MARGIN_MS), { code: 0, signal: null }, 'exited before the grace period ran out');
});

test('log lines past the bound are dropped, and counted once the reader catches up', { timeout: 300_000 }, async (t) => {
  const server = await stalledServer(t);
  assert.equal(await floodLogs(server.base), 600);
  server.readStdout();
  await untilOutput(server, /"dropped":\d+[^\n]*\n/);
  const report = server
    .output()
    .split('\n')
    .find((line) => line.includes('"dropped":'));
  assert.ok(report, 'the drop count is logged once stdout is read again');
  const { dropped, level } = JSON.parse(report) as { dropped: number; level: number };
  assert.ok(dropped > 0);
  assert.equal(level, 40, 'a warning');
  // Lines were dropped whole: every line that did arrive is complete JSON.
  for (const line of server
    .output()
    .split('\n')
    .slice(0, -1)
    .filter((l) => l.startsWith('{')))
    JSON.parse(line);
  server.child.kill('SIGTERM');
  assert.deepEqual(await exitWithin(server, GRACE_MS + MARGIN_MS), { code: 0, signal: null });
});
