import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { DemoCredentials } from '../src/demo/credentials.js';

/** What `npm start` runs after the build. */
const SERVER = fileURLToPath(new URL('../src/server.js', import.meta.url));

export async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  probe.close();
  return port;
}

export interface Started {
  child: ChildProcess;
  base: string;
  output(): string;
  /** Starts reading stdout (at once unless `stallStdout`: till then it fills up like a stalled reader's pipe). */
  readStdout(): void;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function start(t: TestContext, env: Record<string, string>, { stallStdout = false } = {}): Promise<Started> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const { DATABASE_URL: _url, DEMO_PASSWORD: _password, DEMO_DATA: _demo, ...inherited } = process.env;
  const child = spawn(process.execPath, [SERVER], {
    env: { ...inherited, PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: base, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const readStdout = () => child.stdout!.on('data', (chunk) => (output += chunk));
  if (!stallStdout) readStdout();
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  // oidc-provider warns on every start under Node 20 (it supports 22 and later): a known line,
  // not something this test checks.
  const known = /^oidc-provider WARNING: Unsupported runtime\..*\n/m;
  return { child, base, output: () => output.replace(known, ''), readStdout, exit };
}

/** Resolves once /healthz answers; fails early if the process exits first. */
export async function listening(server: Started): Promise<void> {
  const deadline = Date.now() + 30_000;
  let exited = false;
  void server.exit.then(() => (exited = true));
  while (Date.now() < deadline && !exited) {
    try {
      if ((await fetch(`${server.base}/healthz`)).ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`the server did not start:\n${server.output()}`);
}

export function basic(credentials: DemoCredentials): string {
  return `Basic ${Buffer.from(`${credentials.apiId}:${credentials.apiKey}`).toString('base64')}`;
}
