import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { DemoCredentials } from '../src/demo/credentials.js';

/** What `npm start` runs after the build. */
const SERVER = fileURLToPath(new URL('../src/server.js', import.meta.url));

/**
 * The time limit of a test that starts server processes. It only turns a hang into a failure: each
 * start, kill and restart waits for the scheduler, and on a 2-core machine kept busy by other jobs
 * a test that restarts servers ten times has run past two minutes while making progress. The
 * suite's own deadline (scripts/test.mjs) still names whatever is running when it passes.
 */
export const HANG_LIMIT_MS = 600_000;

/** Where freePort draws from: below Linux's ephemeral ports (32768–60999). */
const PORTS = { from: 20_000, count: 12_000 } as const;

/**
 * A port on 127.0.0.1 that nothing listens on now, for a server that must know its address before
 * it listens (its PUBLIC_URL). Drawn at random below the ephemeral range: a port the kernel handed
 * out there (to a listen(0) or an outgoing connection of a test running beside this one) could be
 * taken again between this check and the listen, which made a test fail with EADDRINUSE.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = PORTS.from + Math.floor(Math.random() * PORTS.count);
    const probe = createServer();
    const free = await new Promise<boolean>((resolve) => {
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (free) {
      await new Promise((resolve) => probe.close(resolve));
      return port;
    }
  }
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
    // One process unless the test asks for workers: the suite starts many servers.
    env: { ...inherited, PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: base, LOG_LEVEL: 'info', WORKERS: '1', ...env },
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

/** The JSON log lines of a server's output. */
export function logLines(server: Started): Array<Record<string, unknown>> {
  return server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{"level"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * Resolves once /healthz answers; fails early if the process exits first. The limit only turns a
 * start that hangs into a failure: on a machine busy with other suites a start has taken over 30 s.
 */
export async function listening(server: Started): Promise<void> {
  const deadline = Date.now() + 180_000;
  let exited = false;
  void server.exit.then(() => (exited = true));
  while (Date.now() < deadline && !exited) {
    try {
      if ((await fetchWhole(`${server.base}/healthz`)).ok) return;
    } catch {
      // Not listening yet.
    }
    // The interval of the poll, not a wait for the event: the process announces nothing a test can await.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`the server did not start:\n${server.output()}`);
}

/** Statuses whose response has no body: a `Response` made with one throws. */
const NO_BODY = new Set([101, 204, 205, 304]);

/**
 * `fetch`, with the body read to its end before the answer is handed back. A test that looks only
 * at the status leaves the body unread and its connection busy; when the server is killed at the
 * test's end, Node 22's undici then threw an uncaught error from that connection's parser, after
 * the test had passed. Reading every body frees each connection before the server goes.
 */
export async function fetchWhole(input: string, init?: RequestInit): Promise<Response> {
  const response = await fetch(input, init);
  const body = await response.arrayBuffer();
  const { status, statusText, headers } = response;
  return new Response(NO_BODY.has(status) ? null : body, { status, statusText, headers });
}

export function basic(credentials: DemoCredentials): string {
  return `Basic ${Buffer.from(`${credentials.apiId}:${credentials.apiKey}`).toString('base64')}`;
}

/** The change feed's cursor at its end now: a long-poll from it waits for the next change. */
export async function feedEnd(base: string, authorization: string): Promise<string> {
  for (let since = ''; ; ) {
    const page = (await (await fetch(`${base}/api/changes?pageSize=200${since}`, { headers: { authorization } })).json()) as {
      data: unknown[];
      meta: { nextCursor: string };
    };
    if (page.data.length === 0) return page.meta.nextCursor;
    since = `&since=${page.meta.nextCursor}`;
  }
}
