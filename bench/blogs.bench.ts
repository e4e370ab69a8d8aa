/**
 * Blog API benchmark (issue 3): blog lists of 200 and 999 records with long HTML, the real app
 * against a bare ceiling on the same SQLite file; and multipart uploads of three images, ~200 KB
 * each and then ~3 MB each, to show the server's RSS does not follow the file size (files are
 * streamed to disk, never held whole). 127.0.0.1 only; a measurement, not a test: exits 0 unless
 * it crashed. `npm run build && node dist/bench/blogs.bench.js [--quick] [--blogs=5000]`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Request as CannonRequest } from 'autocannon';
import { noisyJpeg, seedBlogs } from './blog-data.js';
import {
  appEnv,
  benchDir,
  limitRun,
  loadAverage,
  type Measured,
  measure,
  printTable,
  sameAnswers,
  startServer,
  timing,
} from './harness.js';
import { seedDatabase } from './seed.js';

// autocannon.d.ts (bench/, the page bench's) lists what that bench uses; uploads also send a body.
declare module 'autocannon' {
  interface Request {
    body?: Buffer | string;
  }
}

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    duration: { type: 'string' },
    blogs: { type: 'string', default: '5000' },
    connections: { type: 'string', default: '16' },
  },
});
const time = timing(args);
const [DURATION, WARM_UP] = [time.seconds, time.warmUp];
const LIST_CONNECTIONS = Number(args.connections);
const UPLOAD_CONNECTIONS = 4;
const BLOGS = Number(args.blogs);

limitRun('blogs bench', 6 * (DURATION + WARM_UP) * 2 + 300);

const BOUNDARY = '----blogbench7d1c';

/** The file parts of a form, encoded once; each request adds its own data part in front. */
function fileParts(images: Buffer[]): Buffer {
  const names = ['uploadPrimaryImage', 'uploadAdditionalImage', 'uploadAdditionalImages'];
  return Buffer.concat([
    ...images.flatMap((bytes, i) => [
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${names[i % names.length]}"; filename="photo-${i + 1}.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
      ),
      bytes,
      Buffer.from('\r\n'),
    ]),
    Buffer.from(`--${BOUNDARY}--\r\n`),
  ]);
}

function uploadRequest(pageId: number, files: Buffer, label: string): CannonRequest {
  let n = 0;
  return {
    method: 'POST',
    setupRequest: (request) => {
      n += 1;
      const data = JSON.stringify({ page: pageId, info_title: `Upload ${label} ${n}`, info_fulltext: '<p>Three photos</p>' });
      const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="data"\r\n\r\n${data}\r\n`);
      return { ...request, path: '/api/blog', body: Buffer.concat([head, files]) };
    },
  };
}

function print(title: string, rows: Array<[string, Measured]>) {
  console.log(`\n${title}`);
  printTable(rows, 10, 1);
}

async function main() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cms-blogs-bench-'));
  const file = path.join(dataDir, 'cms.sqlite');
  const started = performance.now();
  const seeded = await seedDatabase(file, 20);
  const pageId = seeded.firstId;
  const { averageHtmlBytes } = seedBlogs(file, seeded.siteId, pageId, BLOGS);
  console.log(
    `seeded ${BLOGS} blogs (avg ${averageHtmlBytes} B of HTML) in ${((performance.now() - started) / 1000).toFixed(1)} s; ` +
      `lists at ${LIST_CONNECTIONS} connections, uploads at ${UPLOAD_CONNECTIONS}; ${WARM_UP} s warm-up + ${DURATION} s per run`,
  );
  const auth = { authorization: `Basic ${Buffer.from(`${seeded.apiId}:${seeded.apiKey}`).toString('base64')}` };
  const env = appEnv(dataDir);
  const report: Record<string, unknown> = {};

  for (const size of [200, 999]) {
    const pathOf = () => `/api/blog?pageSize=${size}&offset=${Math.floor(Math.random() * Math.floor(BLOGS / size)) * size}`;
    const app = await startServer('app-server.js', env);
    const ceiling = await startServer('blogs-ceiling.js', { DATABASE_FILE: file, SITE_ID: String(seeded.siteId) });
    const answer = await sameAnswers(app, ceiling, pathOf(), auth);
    const same = answer.same === 'bytes' ? 'byte for byte' : 'same JSON';
    const measured: Array<[string, Measured]> = [];
    for (const [name, server] of [
      ['app', app],
      ['ceiling', ceiling],
    ] as const) {
      measured.push([name, await measure(server, { connections: LIST_CONNECTIONS, makePath: pathOf, headers: auth }, time)]);
    }
    const ratio = measured[0]![1].reqPerSec / measured[1]![1].reqPerSec;
    print(
      `GET /api/blog?pageSize=${size}, ${(Buffer.byteLength(answer.body) / 1e6).toFixed(1)} MB per answer (answers identical: ${same})`,
      measured,
    );
    console.log(`  app/ceiling ${ratio.toFixed(2)}×`);
    report[`list${size}`] = { bytesPerAnswer: Buffer.byteLength(answer.body), app: measured[0]![1], ceiling: measured[1]![1], ratio };
  }

  const uploads: Array<[string, Measured]> = [];
  for (const [label, bytes] of [
    ['3×200KB', 200 * 1024],
    ['3×3MB', 3 * 1024 * 1024],
  ] as const) {
    const images = await Promise.all([1, 2, 3].map((seed) => noisyJpeg(bytes, seed)));
    const files = fileParts(images);
    const app = await startServer('app-server.js', env);
    const headers = { ...auth, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
    const probe = await fetch(`${app.url}/api/blog`, {
      method: 'POST',
      headers,
      body: Buffer.concat([
        Buffer.from(
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="data"\r\n\r\n${JSON.stringify({ page: pageId, info_title: 'Probe' })}\r\n`,
        ),
        files,
      ]),
    });
    if (probe.status !== 201) throw new Error(`upload ${label}: ${probe.status} ${await probe.text()}`);
    const m = await measure(app, { connections: UPLOAD_CONNECTIONS, requests: [uploadRequest(pageId, files, label)], headers }, time);
    uploads.push([`${label} (${(files.length / 1e6).toFixed(1)} MB)`, m]);
    report[`upload ${label}`] = { requestBytes: files.length, imageBytes: images.map((i) => i.length), app: m };
  }
  print(`POST /api/blog multipart, three images per request, app only (${UPLOAD_CONNECTIONS} connections)`, uploads);
  const [small, big] = [report['upload 3×200KB'], report['upload 3×3MB']] as Array<{ requestBytes: number; app: Measured }>;
  console.log(
    `  peak RSS: ${small!.app.maxRssMB.toFixed(0)} MB → ${big!.app.maxRssMB.toFixed(0)} MB while each request grew ` +
      `${((big!.requestBytes - small!.requestBytes) / 1e6).toFixed(1)} MB (${UPLOAD_CONNECTIONS} requests in flight)`,
  );

  const out = path.join(benchDir, 'blogs-results.json');
  writeFileSync(
    out,
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        machine: { nproc: os.availableParallelism(), node: process.version, loadAverage: loadAverage() },
        settings: {
          blogs: BLOGS,
          averageHtmlBytes,
          listConnections: LIST_CONNECTIONS,
          uploadConnections: UPLOAD_CONNECTIONS,
          warmUpSeconds: WARM_UP,
          durationSeconds: DURATION,
        },
        scenarios: report,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\nwrote ${path.relative(process.cwd(), out)}`);
  rmSync(dataDir, { recursive: true, force: true });
}

await main();
