/**
 * Webhook fairness between websites (docs/webhooks.md, "Fair between websites"), on a fresh SQLite
 * database and the real app in a child process with the default webhook settings:
 *
 * - website A has three hooks to a receiver that accepts each request and never answers, and makes
 *   60 changes at once (180 deliveries, each holding its slot for the 15 s time limit);
 * - meanwhile website B, with one hook to a receiver that answers at once, writes a page every
 *   250 ms for `seconds`; each delivery's latency runs from its write's answer to its arrival.
 *
 * Target: B's p99 < 1 s while A's receivers hang. Run alone: `npm run build && node
 * dist/bench/webhooks-fairness.js [seconds]`; the figures go to bench/README.md by hand.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { appEnv, limitRun, startServer, stopServer } from './harness.js';
import { createHook, percentile, receiver, type Site, seedSites } from './webhooks.bench.js';

/** Takes every request and never answers it; counts them. */
async function hangingReceiver() {
  let requests = 0;
  const server = http.createServer(() => {
    requests++;
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hang`,
    requests: () => requests,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

async function write(url: string, site: Site, title: string): Promise<{ page: number; at: number } | undefined> {
  const response = await fetch(`${url}/api/page`, {
    method: 'POST',
    headers: { authorization: site.authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ page_usertitle: title }),
  });
  const at = performance.now();
  if (response.status !== 201) return undefined;
  return { page: ((await response.json()) as { data: { page: number }[] }).data[0]!.page, at };
}

export async function fairnessBench(seconds: number) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cms-bench-fair-'));
  const [noisy, quiet] = (await seedSites(path.join(dataDir, 'cms.sqlite'), 2)) as [Site, Site];
  const hanging = await hangingReceiver();
  const answering = await receiver();
  const app = await startServer('app-server.js', { ...appEnv(dataDir), WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  try {
    for (const name of ['a', 'b', 'c']) await createHook(app, noisy, `${hanging.url}/${name}`);
    answering.trust([await createHook(app, quiet, answering.url)]);
    await Promise.all(Array.from({ length: 60 }, (_, i) => write(app.url, noisy, `Noisy ${i}`)));
    const acknowledged = new Map<number, number>();
    const writes: Promise<void>[] = [];
    const started = performance.now();
    for (let i = 0; i < seconds * 4; i++) {
      const wait = started + i * 250 - performance.now();
      if (wait > 0) await sleep(wait);
      writes.push(
        write(app.url, quiet, `Quiet ${i}`).then((done) => {
          if (done) acknowledged.set(done.page, done.at);
        }),
      );
    }
    await Promise.all(writes);
    const deadline = performance.now() + 60_000;
    while (answering.arrived.size < acknowledged.size && performance.now() < deadline) await sleep(50);
    const latencies = [...acknowledged].flatMap(([id, at]) => {
      const arrived = answering.arrived.get(id);
      return arrived === undefined ? [] : [Math.max(0, arrived - at)];
    });
    latencies.sort((a, b) => a - b);
    const result = {
      writes: seconds * 4,
      delivered: latencies.length,
      hangingRequests: hanging.requests(),
      p50Ms: Number(percentile(latencies, 50).toFixed(1)),
      p99Ms: Number(percentile(latencies, 99).toFixed(1)),
      maxMs: Number((latencies.at(-1) ?? Number.NaN).toFixed(1)),
    };
    console.log(
      `Webhook fairness: website B ${result.delivered}/${result.writes} delivered over ${seconds} s while website A's ` +
        `three receivers hang (${result.hangingRequests} requests held): p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, max ${result.maxMs} ms`,
    );
    return result;
  } finally {
    await stopServer(app);
    hanging.close();
    answering.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const seconds = Number(process.argv[2] ?? 45);
  limitRun('webhooks-fairness', seconds + 180);
  await fairnessBench(seconds);
}
