/**
 * Webhooks (docs/webhooks.md), two figures on a fresh SQLite database of its own:
 *
 * - **Commit to delivery**: writes at a steady 100 a second to one website with one hook to a
 *   receiver in this process, which verifies each delivery with `standardwebhooks`. The latency of
 *   a delivery is from the moment its write's answer arrived (the commit came just before) to the
 *   moment the receiver had its request. Targets: p50 ≤ 200 ms, p99 ≤ 1 s.
 * - **Write throughput with hooks**: POST /api/page at full speed, 32 connections, in interleaved
 *   rounds to two websites of one server: one with three active hooks, one with none. The median
 *   of the per-round ratios: with hooks ≥ 0.9× without. Between rounds the server settles, so the
 *   deliveries one round queued are sent before the other's round begins.
 */
import { once } from 'node:events';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Request as CannonRequest } from 'autocannon';
import { Webhook } from 'standardwebhooks';
import { createCredential, createSite } from '../src/accounts/account.service.js';
import { createDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { appEnv, type Loaded, load, type Server, startServer, stopServer } from './harness.js';
import { median, settle } from './rounds.js';

export interface Site {
  siteId: number;
  authorization: string;
}

export async function seedSites(file: string, count: number): Promise<Site[]> {
  const db = createDatabase(`sqlite:${file}`);
  await migrateToLatest(db);
  const sites: Site[] = [];
  for (let i = 0; i < count; i++) {
    const site = await createSite(db.kysely, `Webhook bench ${i}`);
    const { apiId, apiKey } = await createCredential(db.kysely, site.id, 'bench');
    sites.push({ siteId: site.id, authorization: `Basic ${Buffer.from(`${apiId}:${apiKey}`).toString('base64')}` });
  }
  await db.close();
  return sites;
}

/** A receiver that verifies each delivery and notes when each page's `page.created` arrived. */
export async function receiver() {
  const arrived = new Map<number, number>();
  let secrets: Webhook[] = [];
  let unverified = 0;
  let total = 0;
  const server = http.createServer((request, response) => {
    const at = performance.now();
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      total++;
      const headers = Object.fromEntries(
        ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [h, String(request.headers[h])]),
      );
      const verified = secrets
        .map((hook) => {
          try {
            return hook.verify(body, headers) as { type: string; data: { id: number } };
          } catch {
            return undefined;
          }
        })
        .find(Boolean);
      if (!verified) unverified++;
      else if (verified.type === 'page.created' && !arrived.has(verified.data.id)) arrived.set(verified.data.id, at);
      response.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 1000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    arrived,
    trust: (list: string[]) => (secrets = list.map((s) => new Webhook(s))),
    counts: () => ({ total, unverified }),
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

export async function createHook(app: Server, site: Site, url: string): Promise<string> {
  const response = await fetch(`${app.url}/api/webhooks`, {
    method: 'POST',
    headers: { authorization: site.authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ url, events: ['*'] }),
  });
  if (response.status !== 201) throw new Error(`creating a hook: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { data: { secret: string }[] }).data[0]!.secret;
}

export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

export interface WebhookBenchOptions {
  readonly dataDir: string;
  readonly env: Record<string, string>;
  readonly appFlags: string[];
  /** Seconds of writes at 100/s. */
  readonly latencySeconds: number;
  readonly rounds: number;
  readonly roundSeconds: number;
  readonly connections: number;
}

export async function webhookBench(options: WebhookBenchOptions) {
  const file = path.join(options.dataDir, 'cms.sqlite');
  const [latencySite, hooked, bare] = (await seedSites(file, 3)) as [Site, Site, Site];
  const receive = await receiver();
  const app = await startServer(
    'app-server.js',
    { ...appEnv(options.dataDir), ...options.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
    options.appFlags,
  );
  try {
    // Commit to delivery, at 100 writes a second.
    receive.trust([await createHook(app, latencySite, receive.url)]);
    const acknowledged = new Map<number, number>();
    const writes: Promise<void>[] = [];
    let failedWrites = 0;
    const total = options.latencySeconds * 100;
    const started = performance.now();
    for (let i = 0; i < total; i++) {
      const due = started + i * 10;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      writes.push(
        fetch(`${app.url}/api/page`, {
          method: 'POST',
          headers: { authorization: latencySite.authorization, 'content-type': 'application/json' },
          body: JSON.stringify({ page_usertitle: `Latency ${i}` }),
        }).then(async (response) => {
          const at = performance.now();
          if (response.status !== 201) {
            failedWrites++;
            return;
          }
          acknowledged.set(((await response.json()) as { data: { page: number }[] }).data[0]!.page, at);
        }),
      );
    }
    await Promise.all(writes);
    const deadline = performance.now() + 30_000;
    while (receive.arrived.size < acknowledged.size && performance.now() < deadline) await sleep(50);
    const latencies = [...acknowledged].flatMap(([id, at]) => {
      const arrived = receive.arrived.get(id);
      return arrived === undefined ? [] : [Math.max(0, arrived - at)];
    });
    latencies.sort((a, b) => a - b);
    const latency = {
      writes: total,
      acknowledged: acknowledged.size,
      failedWrites,
      delivered: latencies.length,
      unverified: receive.counts().unverified,
      p50Ms: Number(percentile(latencies, 50).toFixed(1)),
      p90Ms: Number(percentile(latencies, 90).toFixed(1)),
      p99Ms: Number(percentile(latencies, 99).toFixed(1)),
      maxMs: Number((latencies.at(-1) ?? Number.NaN).toFixed(1)),
    };
    console.log(
      `\nWebhooks: commit → delivery at 100 writes/s for ${options.latencySeconds} s: ${latency.delivered}/${latency.acknowledged} delivered, ` +
        `p50 ${latency.p50Ms} ms, p90 ${latency.p90Ms} ms, p99 ${latency.p99Ms} ms, max ${latency.maxMs} ms, ${latency.unverified} unverified`,
    );

    // Write throughput, three active hooks against none, interleaved on one server.
    const secrets = [
      await createHook(app, hooked, receive.url),
      await createHook(app, hooked, receive.url),
      await createHook(app, hooked, receive.url),
    ];
    receive.trust(secrets);
    let written = 0;
    const post = (site: Site) => ({
      connections: options.connections,
      headers: { authorization: site.authorization, 'content-type': 'application/json' },
      // A title of its own per write: the same title twice would be a conflict on the page's alias.
      requests: [
        {
          method: 'POST',
          path: '/api/page',
          setupRequest: (request: CannonRequest) => ({
            ...request,
            body: JSON.stringify({ page_usertitle: `Throughput ${site.siteId} ${written++}` }),
          }),
        },
      ],
    });
    const runs: Record<'hooks' | 'none', Loaded[]> = { hooks: [], none: [] };
    await load(app, { ...post(hooked), seconds: 1 });
    await load(app, { ...post(bare), seconds: 1 });
    await settle(app);
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? (['none', 'hooks'] as const) : (['hooks', 'none'] as const);
      for (const key of order) {
        runs[key].push(await load(app, { ...post(key === 'hooks' ? hooked : bare), seconds: options.roundSeconds }));
        await settle(app);
      }
    }
    const ratios = runs.hooks.map((r, i) => r.reqPerSec / runs.none[i]!.reqPerSec);
    const ratio = median(ratios);
    const rate = (list: Loaded[]) => median(list.map((r) => r.reqPerSec));
    const failed = [...runs.hooks, ...runs.none].reduce((n, r) => n + r.non2xx + r.errors, 0);
    console.log(
      `Webhooks: POST /api/page, ${options.connections} connections, ${options.rounds} rounds of ${options.roundSeconds} s: ` +
        `three hooks ${rate(runs.hooks).toFixed(0)}/s, none ${rate(runs.none).toFixed(0)}/s, ratio ${ratio.toFixed(2)}× ` +
        `(rounds: ${ratios.map((r) => r.toFixed(2)).join(' ')}); ${failed} failed`,
    );
    return {
      latency,
      throughput: {
        hooksPerSec: Math.round(rate(runs.hooks)),
        nonePerSec: Math.round(rate(runs.none)),
        ratio: Number(ratio.toFixed(3)),
        ratios: ratios.map((r) => Number(r.toFixed(3))),
        failed,
        deliveriesReceived: receive.counts().total,
      },
    };
  } finally {
    await stopServer(app);
    receive.close();
  }
}
