import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { connect } from 'node:net';
import type { TestContext } from 'node:test';
import { freePort } from './server-process.js';

/**
 * A throw-away redis-server for this test on a free port, or undefined when none is installed:
 * nothing else's keys are seen or flushed, and nothing is left behind.
 */
export async function startRedis(t: TestContext): Promise<string | undefined> {
  try {
    execFileSync('sh', ['-c', 'command -v redis-server'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const port = await freePort();
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  t.after(() => {
    child.kill();
  });
  // Waits for the port before any client connects: a client refused meanwhile prints ioredis's
  // "Unhandled error event" into the test output.
  for (let i = 0; i < 50; i++) {
    const socket = connect(port, '127.0.0.1');
    const open = await new Promise<boolean>((resolve) => {
      socket.once('connect', () => resolve(true)).once('error', () => resolve(false));
    });
    socket.destroy();
    if (open) return `redis://127.0.0.1:${port}`;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('redis-server did not start');
}
