/**
 * PostgreSQL connections dying under write load: the real server process runs on a database of
 * its own while concurrent writers create pages and another connection terminates the server's
 * backends again and again (what a restart, a failover or pgbouncer's restart does to a pool).
 * The process must stay up, refuse only with 503 problem+json and a Retry-After, lose no
 * acknowledged write, and serve again by itself once the terminations stop.
 *
 * PostgreSQL only (TEST_DATABASE_URL).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { DemoCredentials } from '../src/demo/credentials.js';
import { ownPostgresDatabase, TEST_DATABASE_URL, tempDir } from './helpers.js';
import { basic, HANG_LIMIT_MS, listening, start } from './server-process.js';

const WRITERS = 12;
const TERMINATIONS = 8;

interface Tally {
  acknowledged: Map<number, string>;
  refused: number;
  /** Answers that were neither a success nor a 503 with Retry-After, and requests that got no answer. */
  wrong: string[];
  /** Told of each acknowledged write. */
  readonly acknowledgedNow: Set<() => void>;
}

/** Resolves once `more` writes beyond those acknowledged now are acknowledged, or `ended` settles. */
function acknowledgedMore(tally: Tally, more: number, ended: Promise<unknown>): Promise<void> {
  const target = tally.acknowledged.size + more;
  return new Promise((resolve) => {
    const check = () => {
      if (tally.acknowledged.size < target) return;
      tally.acknowledgedNow.delete(check);
      resolve();
    };
    tally.acknowledgedNow.add(check);
    void ended.finally(() => {
      tally.acknowledgedNow.delete(check);
      resolve();
    });
  });
}

/** Creates pages one after another until `stop()` says so, recording each answer. */
async function writer(base: string, authorization: string, name: string, tally: Tally, stop: () => boolean): Promise<void> {
  for (let n = 0; !stop(); n++) {
    const title = `${name}-${n}`;
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${base}/api/page`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ page_usertitle: title }),
      });
      text = await response.text();
    } catch (error) {
      tally.wrong.push(`${title}: no answer (${(error as Error).message})`);
      return;
    }
    if (response.status === 201 || response.status === 200) {
      const { data } = JSON.parse(text) as { data: { page: number }[] };
      tally.acknowledged.set(data[0]?.page as number, title);
      for (const told of [...tally.acknowledgedNow]) told();
    } else if (
      response.status === 503 &&
      response.headers.get('content-type')?.startsWith('application/problem+json') &&
      Number(response.headers.get('retry-after')) > 0
    ) {
      tally.refused += 1;
      await sleep(20); // a client's pause before writing again, not a wait for an event
    } else {
      tally.wrong.push(`${title}: ${response.status} ${text}`);
    }
  }
}

test('backends terminated again and again under concurrent writes: the process stays up and loses nothing', {
  skip: !TEST_DATABASE_URL && 'PostgreSQL only',
  timeout: HANG_LIMIT_MS,
}, async (t) => {
  const database = await ownPostgresDatabase(t, 'failover');
  const { admin } = database;
  const dataDir = await tempDir(t);
  const server = await start(t, { DATA_DIR: dataDir, DATABASE_URL: database.url, RATE_LIMIT_API: '0' });
  await listening(server);
  const credentials = JSON.parse(await readFile(path.join(dataDir, 'demo-credentials.json'), 'utf8')) as DemoCredentials;
  const authorization = basic(credentials);

  const tally: Tally = { acknowledged: new Map(), refused: 0, wrong: [], acknowledgedNow: new Set() };
  let stopped = false;
  const writers = Array.from({ length: WRITERS }, (_, i) => writer(server.base, authorization, `w${i}`, tally, () => stopped));
  const ended = Promise.all(writers);
  let terminated = 0;
  // Each round waits for writes to get through again (as many as there are writers), then cuts
  // every backend under the writes in flight.
  for (let round = 0; round < TERMINATIONS && server.child.exitCode === null; round++) {
    await acknowledgedMore(tally, WRITERS, ended);
    const { rows } = await admin.query<{ n: number }>(
      'select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
      [database.name],
    );
    terminated += rows[0]?.n ?? 0;
  }
  await acknowledgedMore(tally, WRITERS, ended);
  stopped = true;
  await ended;

  assert.equal(server.child.exitCode, null, `the process is still running:\n${server.output()}`);
  assert.deepEqual(tally.wrong, [], 'every refusal is a 503 problem with Retry-After');
  assert.ok(terminated >= TERMINATIONS, `backends were terminated (${terminated})`);
  assert.ok(tally.acknowledged.size > WRITERS, `writes got through between the terminations (${tally.acknowledged.size})`);

  // Serving again by itself: ready, and a write goes through.
  const ready = await fetch(`${server.base}/readyz`);
  assert.equal(ready.status, 200);
  const after = await fetch(`${server.base}/api/page`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ page_usertitle: 'after the terminations' }),
  });
  assert.equal(after.status, 201, await after.text());

  // Every acknowledged write is there as acknowledged, in the database itself.
  const check = new pg.Client({ connectionString: database.url });
  await check.connect();
  const { rows } = await check
    .query<{ id: number; title: string }>('select page as id, page_usertitle as title from pages where page = any($1)', [
      [...tally.acknowledged.keys()],
    ])
    .finally(() => check.end());
  const stored = new Map(rows.map((r) => [Number(r.id), r.title]));
  for (const [id, title] of tally.acknowledged) assert.equal(stored.get(id), title, `page ${id} was acknowledged as "${title}"`);
  assert.match(server.output(), /"level":40[^\n]*(terminat|connection)/i, 'the lost connections are logged as warnings');
  t.diagnostic(`${terminated} backends terminated; ${tally.acknowledged.size} writes acknowledged, ${tally.refused} refused with 503`);
});
