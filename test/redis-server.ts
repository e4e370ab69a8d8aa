import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import type { TestContext } from 'node:test';
import { freePort } from './server-process.js';

/** A throw-away redis-server the test can kill and start again on the same port. */
export interface RedisProcess {
  readonly url: string;
  /** Kills the server (SIGKILL: a crash, no goodbye to its clients) and waits for it to exit. */
  kill(): Promise<void>;
  /** Starts a new, empty server on the same port. */
  restart(): Promise<void>;
}

/**
 * A throw-away redis-server for this test on a free port, or undefined when none is installed:
 * nothing else's keys are seen or flushed, and nothing is left behind.
 */
export async function startRedisProcess(t: TestContext): Promise<RedisProcess | undefined> {
  try {
    execFileSync('sh', ['-c', 'command -v redis-server'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const port = await freePort();
  let child: ChildProcess | undefined;
  const run = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    await portOpen(port);
  };
  const kill = async () => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  };
  t.after(kill);
  await run();
  return { url: `redis://127.0.0.1:${port}`, kill, restart: run };
}

export async function startRedis(t: TestContext): Promise<string | undefined> {
  return (await startRedisProcess(t))?.url;
}

// Waits for the port before any client connects: a client refused meanwhile prints ioredis's
// "Unhandled error event" into the test output.
async function portOpen(port: number): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const socket = connect(port, '127.0.0.1');
    const open = await new Promise<boolean>((resolve) => {
      socket.once('connect', () => resolve(true)).once('error', () => resolve(false));
    });
    socket.destroy();
    if (open) return;
    await new Promise((r) => setTimeout(r, 100)); // the interval of the poll: redis-server announces nothing we read
  }
  throw new Error('redis-server did not start');
}
