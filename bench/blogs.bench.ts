/**
 * Blog API benchmark (issue 3): blog lists of 200 and 999 records with long HTML, the real app
 * against a bare ceiling on the same SQLite file; and multipart uploads of three images, ~200 KB
 * each and then ~3 MB each, to show the server's RSS does not follow the file size (files are
 * streamed to disk, never held whole). 127.0.0.1 only; a measurement, not a test: exits 0 unless
 * it crashed. `npm run build && node dist/bench/blogs.bench.js [--quick] [--blogs=5000]`.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import autocannon, { type Request as CannonRequest } from 'autocannon';
import SQLite from 'better-sqlite3';
import sharp from 'sharp';
import { BLOG_FIELDS, type BlogField } from '../src/content/blogs/blog.fields.js';
import { htmlToText } from '../src/content/shared/filters.js';
import { formatTimestamp } from '../src/db/time.js';
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
const DURATION = Number(args.duration ?? (args.quick ? 3 : 10));
const WARM_UP = args.quick ? 1 : 3;
const LIST_CONNECTIONS = Number(args.connections);
const UPLOAD_CONNECTIONS = 4;
const BLOGS = Number(args.blogs);
const here = path.dirname(fileURLToPath(import.meta.url));
const benchDir = path.resolve(here, '../../bench');

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
setTimeout(
  () => {
    console.error('blogs bench: over its time limit, stopping');
    process.exit(1);
  },
  (6 * (DURATION + WARM_UP) * 2 + 300) * 1000,
).unref();

/** mulberry32, as in seed.ts: the same data every run. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = 'bread starter flour oven crust crumb recipe season market coffee butter honey garden autumn winter village bakery morning'
  .split(' ')
  .concat('team kitchen festival opening hours delivery order fresh local organic rye wheat spelt seeds'.split(' '));

/** Blogs with long HTML bodies (4–14 KB), straight through better-sqlite3 in one transaction. */
function seedBlogs(file: string, siteId: number, pageId: number, count: number): { averageHtmlBytes: number } {
  const sqlite = new SQLite(file);
  const random = prng(3);
  const pick = () => WORDS[Math.floor(random() * WORDS.length)]!;
  const words = (n: number) => Array.from({ length: n }, pick).join(' ');
  const paragraph = () =>
    `<p class="lead">${words(12)} <strong>${words(2)}</strong> ${words(25)} <a href="/blog/${pick()}" title="${words(2)}">${words(3)}</a>.</p>`;
  const fields = (Object.keys(BLOG_FIELDS) as BlogField[]).filter((f) => f !== 'info_id');
  const insert = sqlite.prepare(
    `insert into blogs (site_id, search_text, ${fields.join(', ')}) values (@site_id, @search_text, ${fields.map((f) => `@${f}`).join(', ')})`,
  );
  let htmlBytes = 0;
  sqlite.transaction(() => {
    for (let i = 0; i < count; i++) {
      const title = `${words(4)} ${i + 1}`;
      const parts = [`<h2>${words(5)}</h2>`];
      const target = 4000 + random() * 10000;
      let length = 0;
      while (length < target) {
        const p = paragraph();
        parts.push(p);
        length += p.length;
      }
      const html = parts.join('\n');
      htmlBytes += html.length;
      const date = formatTimestamp(new Date(Date.parse('2020-01-01T00:00:00Z') + i * 3_600_000));
      const row: Record<string, string | number> = {
        ...Object.fromEntries(fields.map((f) => [f, BLOG_FIELDS[f].kind === 'text' || BLOG_FIELDS[f].kind === 'timestamp' ? '' : 0])),
        page: pageId,
        info_title: title,
        info_fulltext: html,
        info_summary: words(30),
        info_metatitle: `${title} | Bakery`,
        info_filename: `post-${i + 1}`,
        info_tags: `${pick()}, ${pick()}, ${pick()}`,
        info_show: random() < 0.9 ? 'Y' : 'N',
        info_date: date.slice(0, 10),
        info_timestamp: date,
        info_order: 0,
        info_img: `/images/${(i + 1).toString(16).padStart(32, '0')}.jpg`,
        info_img_json: JSON.stringify({ width: 1200, height: 800, bytes: 180_000 + i, type: 'image/jpeg' }),
        info_more_images: JSON.stringify([`/images/${(i + 1).toString(16).padStart(31, '0')}a.jpg`]),
        info_blog_comments_on: random() < 0.5 ? 1 : 0,
        cid: siteId,
        site_id: siteId,
      };
      row.search_text = [row.info_title, row.info_metatitle, row.info_summary, row.info_tags, htmlToText(html)].join('\n');
      insert.run(row);
    }
  })();
  sqlite.pragma('wal_checkpoint(TRUNCATE)');
  sqlite.close();
  return { averageHtmlBytes: Math.round(htmlBytes / count) };
}

/** A JPEG of about `bytes`: noise compresses badly, so its size follows its area. */
async function noisyJpeg(bytes: number, seed: number): Promise<Buffer> {
  const random = prng(seed);
  let side = Math.ceil(Math.sqrt(bytes / 1.5));
  for (;;) {
    const pixels = Buffer.alloc(side * side * 3);
    for (let i = 0; i < pixels.length; i++) pixels[i] = Math.floor(random() * 256);
    const jpeg = await sharp(pixels, { raw: { width: side, height: side, channels: 3 } })
      .jpeg({ quality: 80 })
      .toBuffer();
    if (jpeg.length >= bytes * 0.9) return jpeg;
    side = Math.ceil(side * Math.sqrt(bytes / jpeg.length));
  }
}

async function startServer(script: string, env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const child = fork(path.join(here, script), [], { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(child);
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before listening`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.send('stop');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

function rssMB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

interface Measured {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  idleRssMB: number;
  maxRssMB: number;
  requests: number;
  non2xx: number;
  errors: number;
}

async function load(
  server: { url: string; child: ChildProcess },
  connections: number,
  seconds: number,
  request: CannonRequest,
  headers: Record<string, string>,
): Promise<Omit<Measured, 'idleRssMB'>> {
  const pid = server.child.pid!;
  let max = rssMB(pid);
  const timer = setInterval(() => {
    max = Math.max(max, rssMB(pid));
  }, 100);
  const result = await autocannon({ url: server.url, connections, duration: seconds, timeout: 30, headers, requests: [request] });
  clearInterval(timer);
  return {
    reqPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxRssMB: Math.max(max, rssMB(pid)),
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

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

const fmt = (n: number, digits = 0) => n.toFixed(digits).padStart(9);

function print(title: string, rows: Array<[string, Measured]>) {
  console.log(`\n${title}`);
  console.log('  server          req/s   p50 ms   p99 ms   RSS MB  (at rest)   requests  non-2xx');
  for (const [name, m] of rows) {
    console.log(
      `  ${name.padEnd(10)}${fmt(m.reqPerSec, 1)}${fmt(m.p50Ms, 1)}${fmt(m.p99Ms, 1)}${fmt(m.maxRssMB)}${`(${m.idleRssMB.toFixed(0)})`.padStart(11)}${fmt(m.requests).padStart(11)}${fmt(m.non2xx + m.errors)}`,
    );
  }
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
  const appEnv = {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    DEMO_DATA: 'false',
    PORT: '0',
    HOST: '127.0.0.1',
    PUBLIC_URL: 'http://127.0.0.1',
  };
  const report: Record<string, unknown> = {};

  for (const size of [200, 999]) {
    const pathOf = () => `/api/blog?pageSize=${size}&offset=${Math.floor(Math.random() * Math.floor(BLOGS / size)) * size}`;
    const app = await startServer('app-server.js', appEnv);
    const ceiling = await startServer('blogs-ceiling.js', { DATABASE_FILE: file, SITE_ID: String(seeded.siteId) });
    const sample = pathOf();
    const [a, c] = await Promise.all([fetch(app.url + sample, { headers: auth }), fetch(ceiling.url + sample)]);
    const [aText, cText] = await Promise.all([a.text(), c.text()]);
    const same = aText === cText ? 'byte for byte' : isDeepStrictEqual(JSON.parse(aText), JSON.parse(cText)) ? 'same JSON' : undefined;
    if (a.status !== 200 || !same) throw new Error(`list ${size}: the ceiling's answer differs from the app's (${a.status})`);
    const measured: Array<[string, Measured]> = [];
    for (const [name, server] of [
      ['app', app],
      ['ceiling', ceiling],
    ] as const) {
      const idleRssMB = rssMB(server.child.pid!);
      const request: CannonRequest = { method: 'GET', setupRequest: (r) => ({ ...r, path: pathOf() }) };
      await load(server, LIST_CONNECTIONS, WARM_UP, request, auth);
      measured.push([name, { idleRssMB, ...(await load(server, LIST_CONNECTIONS, DURATION, request, auth)) }]);
      await stopServer(server.child);
    }
    const ratio = measured[0]![1].reqPerSec / measured[1]![1].reqPerSec;
    print(
      `GET /api/blog?pageSize=${size}, ${(Buffer.byteLength(aText) / 1e6).toFixed(1)} MB per answer (answers identical: ${same})`,
      measured,
    );
    console.log(`  app/ceiling ${ratio.toFixed(2)}×`);
    report[`list${size}`] = { bytesPerAnswer: Buffer.byteLength(aText), app: measured[0]![1], ceiling: measured[1]![1], ratio };
  }

  const uploads: Array<[string, Measured]> = [];
  for (const [label, bytes] of [
    ['3×200KB', 200 * 1024],
    ['3×3MB', 3 * 1024 * 1024],
  ] as const) {
    const images = await Promise.all([1, 2, 3].map((seed) => noisyJpeg(bytes, seed)));
    const files = fileParts(images);
    const app = await startServer('app-server.js', appEnv);
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
    const idleRssMB = rssMB(app.child.pid!);
    const request = uploadRequest(pageId, files, label);
    await load(app, UPLOAD_CONNECTIONS, WARM_UP, request, headers);
    const m = { idleRssMB, ...(await load(app, UPLOAD_CONNECTIONS, DURATION, request, headers)) };
    await stopServer(app.child);
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
        machine: { nproc: os.availableParallelism(), node: process.version, loadAverage: os.loadavg().map((l) => Number(l.toFixed(2))) },
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
