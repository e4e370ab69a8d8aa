/**
 * What the change log costs a write: page inserts and updates per second through this build
 * (which records every change in the write's transaction) against a build without the log (a
 * checkout of the commit before it, built, named by --baseline), in one interleaved run; and how
 * much the database grows per revision. Each build seeds its own database with its own seed.ts
 * and migrations, from the same PRNG, so both start from the same pages. Importing this module
 * runs nothing.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Request as CannonRequest } from 'autocannon';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { appEnv, type Server, startServer, stopServer } from './harness.js';
import { type Contender, interleave, medianRatio, printSummaries, type RoundsOptions, roundRatios, summarise } from './rounds.js';
import { prng, type Seeded, seedDatabase } from './seed.js';
import { seedPostgres } from './seed-pg.js';

export interface WritesOptions {
  /** A built checkout without the change log: its dist/bench/app-server.js, seed.js and seed-pg.js are used. */
  baseline: string;
  pages: number;
  rounds: RoundsOptions;
  /** Rounds of the PostgreSQL comparison. */
  pgRounds: RoundsOptions;
  env: Record<string, string>;
  appFlags: string[];
  /** Updates whose growth is measured. */
  revisions: number;
  /** PostgreSQL's admin URL, or undefined to leave it out. */
  pgUrl: string | undefined;
}

export interface WritesResult {
  targets: { section: string; target: string; value: string; pass: boolean | undefined }[];
  report: Record<string, unknown>;
}

/** The ratio the log may cost at most: with/without ≥ 0.85 for inserts and for updates. */
const MIN_RATIO = 0.85;

const WORDS = 'garden kitchen summer winter price offer booking contact opening hours family history menu event gallery news'.split(' ');

/**
 * Page bodies of the size the bench's pages have (seed.ts: 0.5–3 KB of HTML, about 3 KB of JSON a
 * record); every body differs (a counter in the title, new words in the text), so every update
 * changes the record and records a revision.
 */
export function pageWrites(seeded: Seeded) {
  const random = prng(Date.now() & 0xffff);
  let n = 0;
  const words = (count: number) => Array.from({ length: count }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
  const html = () =>
    Array.from({ length: 2 + Math.floor(random() * 7) }, () => `<p>${words(12)} <strong>${words(2)}</strong> ${words(16)}.</p>`).join('\n');
  const content = () => {
    n++;
    return {
      page_usertitle: `${words(3)} ${n}`,
      page_summary: words(20),
      page_html_content: html(),
      page_html_intro: `<p>${words(20)}</p>`,
    };
  };
  const span = seeded.lastId - seeded.firstId + 1;
  return {
    insert: () => ({ ...content(), page_menuname: words(2), page_keywords: words(3).replace(/ /g, ', ') }),
    update: () => ({ id: seeded.firstId + Math.floor(random() * span), ...content() }),
  };
}

/** POST /api/page with a fresh JSON body per request. */
export function posting(headers: Record<string, string>, body: () => object): CannonRequest[] {
  return [
    {
      method: 'POST',
      path: '/api/page',
      headers: { ...headers, 'content-type': 'application/json' },
      setupRequest: (request) => ({ ...request, body: JSON.stringify(body()) }),
    },
  ];
}

const basic = (s: { apiId: string; apiKey: string }) => ({
  authorization: `Basic ${Buffer.from(`${s.apiId}:${s.apiKey}`).toString('base64')}`,
});

async function post(server: Server, headers: Record<string, string>, body: object): Promise<number> {
  const response = await fetch(`${server.url}/api/page`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.status;
}

/**
 * Before any load: both servers insert and update (201, 200), and this build has a change feed,
 * with the update in it; the baseline answers /api/changes with 404 (a build before the log) or
 * 200 (a build with it, to measure another change). Otherwise the two builds are not what the
 * comparison says they are.
 */
async function checkBuilds(withLog: Side, withoutLog: Side): Promise<void> {
  for (const side of [withLog, withoutLog]) {
    const writes = pageWrites(side.seeded);
    const statuses = [await post(side.server, side.headers, writes.insert()), await post(side.server, side.headers, writes.update())];
    if (statuses[0] !== 201 || statuses[1] !== 200) throw new Error(`${side.name}: insert ${statuses[0]}, update ${statuses[1]}`);
  }
  const feed = async (side: Side) => fetch(`${side.server.url}/api/changes?pageSize=999`, { headers: side.headers });
  const logged = await feed(withLog);
  const changes = ((await logged.json()) as { data?: { op: string }[] }).data ?? [];
  if (logged.status !== 200 || !changes.some((c) => c.op === 'update')) throw new Error('the build under test recorded no change');
  const baseline = await feed(withoutLog);
  await baseline.arrayBuffer();
  // A baseline with its own change log compares two builds that both log (a change's cost on writes).
  if (baseline.status === 200) console.log('The baseline has a change log too: the comparison is between two builds that both log.');
  else if (baseline.status !== 404) throw new Error(`the baseline answers GET /api/changes with ${baseline.status}`);
}

interface Side {
  name: string;
  server: Server;
  seeded: Seeded;
  headers: Record<string, string>;
}

/** Inserts and updates, with the log and without, four contenders in one interleaved run. */
async function compareWrites(title: string, withLog: Side, withoutLog: Side, rounds: RoundsOptions) {
  await checkBuilds(withLog, withoutLog);
  const contenders: Contender[] = [];
  for (const side of [withLog, withoutLog]) {
    const writes = pageWrites(side.seeded);
    contenders.push({ key: `${side.name} insert`, server: side.server, requests: posting(side.headers, writes.insert) });
    contenders.push({ key: `${side.name} update`, server: side.server, requests: posting(side.headers, writes.update) });
  }
  const runs = await interleave(contenders, rounds);
  const summaries = Object.fromEntries(Object.entries(runs).map(([key, r]) => [key, summarise(r)]));
  console.log(`\n${title}   (${rounds.rounds} rounds of ${rounds.seconds} s each, ${rounds.connections} connections)`);
  printSummaries(
    Object.entries(summaries).map(([key, s]) => [key, s]),
    18,
  );
  const ratios: Record<string, { ratio: number; rounds: number[] }> = {};
  for (const op of ['insert', 'update']) {
    const a = runs[`${withLog.name} ${op}`]!;
    const b = runs[`${withoutLog.name} ${op}`]!;
    ratios[op] = { ratio: medianRatio(a, b), rounds: roundRatios(a, b).map((r) => Number(r.toFixed(3))) };
    console.log(
      `  ${op}s: with/without the log ${ratios[op]!.ratio.toFixed(2)}× (rounds: ${ratios[op]!.rounds.map((r) => r.toFixed(2)).join(' ')})`,
    );
  }
  return { summaries, ratios };
}

/**
 * `requests` page updates, `concurrency` at a time. A 503 (the database pool's wait ran out, on a
 * machine shared with other loads) is sent again, up to 50 in all: growth counts the revisions
 * made, not the requests; anything else fails the run.
 */
async function updates(side: Side, requests: number, concurrency = 8): Promise<void> {
  const writes = pageWrites(side.seeded);
  let done = 0;
  let retries = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (done < requests) {
        done++;
        const status = await post(side.server, side.headers, writes.update());
        if (status === 503 && retries++ < 50) done--;
        else if (status !== 200) throw new Error(`an update answered ${status}`);
      }
    }),
  );
}

/**
 * SQLite's growth per revision, read through a connection of its own (the WAL included): the
 * pages of content_changes and its indexes (dbstat), and of the whole database (page_count less
 * the free list), before and after `revisions` updates.
 */
async function sqliteGrowth(side: Side, file: string, revisions: number) {
  const db = new SQLite(file, { readonly: true });
  try {
    const objects = (db.prepare(`select name from sqlite_master where tbl_name = 'content_changes'`).all() as { name: string }[]).map(
      (o) => o.name,
    );
    const size = db.prepare('select coalesce(sum(pgsize), 0) as bytes from dbstat where name = ?');
    const read = () => ({
      log: objects.reduce((sum, name) => sum + (size.get(name) as { bytes: number }).bytes, 0),
      used:
        (Number(db.pragma('page_count', { simple: true })) - Number(db.pragma('freelist_count', { simple: true }))) *
        Number(db.pragma('page_size', { simple: true })),
      rows: db.prepare('select count(*) as n, max(seq) as seq from content_changes').get() as { n: number; seq: number },
    });
    const before = read();
    await updates(side, revisions);
    const after = read();
    const added = after.rows.n - before.rows.n;
    const json = db.prepare('select avg(length(record_json)) as bytes from content_changes where seq > ?').get(before.rows.seq) as {
      bytes: number;
    };
    const figures = {
      revisions: added,
      logBytesPerRevision: Math.round((after.log - before.log) / added),
      databaseBytesPerRevision: Math.round((after.used - before.used) / added),
      recordJsonBytes: Math.round(json.bytes),
      logObjects: objects,
    };
    console.log(
      `\nSQLite growth over ${added} updates: content_changes and its indexes ${figures.logBytesPerRevision} B per revision, ` +
        `the whole database ${figures.databaseBytesPerRevision} B (record_json ${figures.recordJsonBytes} B on average)`,
    );
    return figures;
  } finally {
    db.close();
  }
}

/** PostgreSQL's growth per revision: pg_total_relation_size (table, TOAST, indexes) of content_changes. */
async function pgGrowth(side: Side, url: string, revisions: number) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const read = async () => {
      const { rows } = await client.query<{ bytes: string; n: string; json: string }>(
        `select pg_total_relation_size('content_changes') as bytes, count(*) as n, coalesce(sum(length(record_json)), 0) as json from content_changes`,
      );
      return { bytes: Number(rows[0]!.bytes), n: Number(rows[0]!.n), json: Number(rows[0]!.json) };
    };
    const before = await read();
    await updates(side, revisions);
    const after = await read();
    const added = after.n - before.n;
    const figures = {
      revisions: added,
      logBytesPerRevision: Math.round((after.bytes - before.bytes) / added),
      recordJsonBytes: Math.round((after.json - before.json) / added),
    };
    console.log(
      `PostgreSQL growth over ${added} updates: content_changes (table, TOAST, indexes) ${figures.logBytesPerRevision} B per revision ` +
        `(record_json ${figures.recordJsonBytes} characters on average; TOAST compresses it)`,
    );
    return figures;
  } finally {
    await client.end();
  }
}

type SeedModule = { seedDatabase: typeof seedDatabase };
type SeedPgModule = { seedPostgres: typeof seedPostgres };

export async function writesSection(options: WritesOptions): Promise<WritesResult> {
  const result: WritesResult = { targets: [], report: {} };
  // Resolved to an absolute path: startServer resolves a relative one against dist/bench, and with
  // no --baseline a path relative to the working directory would find this checkout's own build.
  const baselineServer = options.baseline ? path.resolve(options.baseline, 'dist/bench/app-server.js') : '';
  if (!baselineServer || !existsSync(baselineServer)) {
    const why = `${options.baseline ? `no built baseline at ${options.baseline}` : 'no --baseline given'} (git worktree add --detach <dir> <commit before the change log>, link node_modules, npm run build, then --baseline=<dir>)`;
    console.log(`\nwrites: skipped, ${why}`);
    result.targets.push({ section: 'writes', target: 'writes section', value: 'no baseline build', pass: undefined });
    result.report.skipped = why;
    return result;
  }
  const baselineSeed = (await import(pathToFileURL(path.join(options.baseline, 'dist/bench/seed.js')).href)) as SeedModule;
  const dirs = {
    with: mkdtempSync(path.join(os.tmpdir(), 'cms-bench-log-')),
    without: mkdtempSync(path.join(os.tmpdir(), 'cms-bench-nolog-')),
  };
  const files = { with: path.join(dirs.with, 'cms.sqlite'), without: path.join(dirs.without, 'cms.sqlite') };
  const servers: Server[] = [];
  const stopAll = async () => {
    await Promise.all(servers.splice(0).map(stopServer));
  };
  const check = (db: string, op: string, ratio: number) =>
    result.targets.push({
      section: 'writes',
      target: `${db}: page ${op}s with the log ≥ ${MIN_RATIO}× without (median ratio)`,
      value: `${ratio.toFixed(2)}×`,
      pass: ratio >= MIN_RATIO,
    });
  try {
    const seeded = {
      with: await seedDatabase(files.with, options.pages),
      without: await baselineSeed.seedDatabase(files.without, options.pages),
    };
    const start = async (name: 'with' | 'without', env: Record<string, string>): Promise<Side> => {
      const script = name === 'with' ? 'app-server.js' : baselineServer;
      const server = await startServer(script, { ...appEnv(dirs[name]), ...options.env, ...env }, options.appFlags);
      servers.push(server);
      return { name: `${name} log`, server, seeded: seeded[name], headers: basic(seeded[name]) };
    };

    const sqlite = { with: await start('with', {}), without: await start('without', {}) };
    const compared = await compareWrites(
      'SQLite: POST /api/page, inserts and updates, with the change log and without',
      sqlite.with,
      sqlite.without,
      options.rounds,
    );
    for (const op of ['insert', 'update']) check('sqlite', op, compared.ratios[op]!.ratio);
    const failed = Object.values(compared.summaries).reduce((sum, s) => sum + s.failed, 0);
    result.targets.push({ section: 'writes', target: 'sqlite: every write answered 2xx', value: String(failed), pass: failed === 0 });
    const growth = await sqliteGrowth(sqlite.with, files.with, options.revisions);
    result.report.sqlite = { ...compared, growth };
    await stopAll();

    if (options.pgUrl) {
      const baselinePg = (await import(pathToFileURL(path.join(options.baseline, 'dist/bench/seed-pg.js')).href)) as SeedPgModule;
      // Each build's own schema, filled with the pages of its own SQLite file.
      const pgSeeded = {
        with: await seedPostgres(options.pgUrl, files.with),
        without: await baselinePg.seedPostgres(options.pgUrl, files.without),
      };
      try {
        const startPg = async (name: 'with' | 'without') => {
          const side = await start(name, { DATABASE_URL: pgSeeded[name].url });
          // The PostgreSQL website and credential are its own; the pages keep their SQLite ids.
          return { ...side, seeded: { ...side.seeded, ...pgSeeded[name] }, headers: basic(pgSeeded[name]) };
        };
        const postgres = { with: await startPg('with'), without: await startPg('without') };
        const comparedPg = await compareWrites(
          'PostgreSQL: POST /api/page, inserts and updates, with the change log and without',
          postgres.with,
          postgres.without,
          options.pgRounds,
        );
        for (const op of ['insert', 'update']) check('postgres', op, comparedPg.ratios[op]!.ratio);
        const pgGrowthFigures = await pgGrowth(postgres.with, pgSeeded.with.url, options.revisions);
        result.report.postgres = { ...comparedPg, growth: pgGrowthFigures };
        await stopAll();
      } finally {
        await stopAll();
        await pgSeeded.with.drop();
        await pgSeeded.without.drop();
      }
    }
  } finally {
    await stopAll();
    rmSync(dirs.with, { recursive: true, force: true });
    rmSync(dirs.without, { recursive: true, force: true });
  }
  return result;
}
