/**
 * What the fuzz suite holds every answer to, and how many cases it runs. FUZZ_RUNS is the total
 * number of cases of the whole suite (default 2000), shared among the properties by weight;
 * FUZZ_SEED and FUZZ_PATH replay a failure (fast-check prints both in its failure message).
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import type { Db } from '../src/db/database.js';
import { filesIn } from './blog-fixtures.js';

const TOTAL_RUNS = positive(process.env.FUZZ_RUNS, 2000);
/** Every property's weight, summed: each gets TOTAL_RUNS * weight / WEIGHTS cases. */
const WEIGHTS = 115;

function positive(raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`FUZZ_RUNS must be a positive whole number, not ${raw}`);
  return n;
}

/**
 * Runs an async property for its share of FUZZ_RUNS; with FUZZ_SEED (and FUZZ_PATH) it replays one
 * failure. `check` returns the status it got: the tally, printed as a test diagnostic, shows what
 * the cases reached (a suite whose every case is a 400 would prove little).
 */
export async function fuzz<T>(
  t: TestContext,
  weight: number,
  arbitrary: fc.Arbitrary<T>,
  check: (value: T) => Promise<number | string>,
): Promise<void> {
  const seed = process.env.FUZZ_SEED;
  const path = process.env.FUZZ_PATH;
  const numRuns = Math.max(1, Math.round((TOTAL_RUNS * weight) / WEIGHTS));
  const statuses = new Map<number | string, number>();
  const property = fc.asyncProperty(arbitrary, async (value) => {
    const status = await check(value);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  });
  await fc.assert(property, { numRuns, ...(seed ? { seed: Number(seed) } : {}), ...(path ? { path } : {}) });
  const tally = [...statuses].sort(([a], [b]) => String(a).localeCompare(String(b))).map(([status, n]) => `${status}: ${n}`);
  t.diagnostic(`${numRuns} cases; ${tally.join(', ')}`);
}

/** How long one request may take; a request never answered is a failure, not a stalled suite. */
const ANSWER_WITHIN_MS = 15_000;

/** The response, or a failure if none comes within ANSWER_WITHIN_MS (an idle event loop would end the test silently). */
export async function answered<R>(pending: Promise<R>, what: string): Promise<R> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ANSWER_WITHIN_MS} ms`)), ANSWER_WITHIN_MS);
  });
  try {
    return await Promise.race([pending, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The answer of a content endpoint: never a 5xx; every 4xx an RFC 9457 problem (docs/errors.md). */
export function assertAnswer(response: LightMyRequestResponse, what: string): number {
  const status = response.statusCode;
  assert.ok(status < 500, `${what}: ${status} ${response.body.slice(0, 500)}`);
  if (status < 400) return status;
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/, `${what}: ${status} is not a problem`);
  if (response.raw.req.method === 'HEAD') return status;
  const problem = JSON.parse(response.body);
  assert.equal(problem.status, status, `${what}: status member`);
  assert.match(problem.type, /^\/problems\/[a-z0-9-]+$/, `${what}: type`);
  for (const member of ['title', 'detail', 'instance'] as const) {
    assert.equal(typeof problem[member], 'string', `${what}: ${member} in ${response.body.slice(0, 300)}`);
  }
  assert.ok(problem.title.length > 0 && problem.detail.length > 0, `${what}: empty title or detail`);
  return status;
}

/**
 * An OAuth endpoint's answer (token, revocation, registration): never a 5xx; every 4xx an RFC 6749
 * §5.2 error, JSON with an `error` code in the RFC's character set (docs/errors.md#oauth-endpoints).
 */
export function assertOAuthAnswer(response: LightMyRequestResponse, what: string): number {
  const status = response.statusCode;
  assert.ok(status < 500, `${what}: ${status} ${response.body.slice(0, 500)}`);
  if (status < 400) return status;
  // A rate limit, or a registration body too large to read, refuses before any OAuth endpoint runs:
  // a problem, as everywhere else, not an RFC 6749 error, which has no code for either (docs/errors.md).
  if (status === 429 || status === 413) return assertAnswer(response, what);
  assert.match(String(response.headers['content-type']), /^application\/json/, `${what}: ${status} ${response.body.slice(0, 300)}`);
  const body = JSON.parse(response.body);
  assert.match(body.error, /^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/, `${what}: error code`);
  if (body.error_description !== undefined) assert.equal(typeof body.error_description, 'string', `${what}: error_description`);
  return status;
}

/**
 * Everything a write can leave behind: the content rows, the image files (staged ones
 * included) and the change log's counters. A refused write must leave it exactly as it was.
 */
export async function contentState(db: Db, imagesDir: string): Promise<string> {
  const k = db.kysely;
  const [pages, blogs, images, files, changes] = await Promise.all([
    k.selectFrom('pages').selectAll().orderBy('page').execute(),
    k.selectFrom('blogs').selectAll().orderBy('info_id').execute(),
    k.selectFrom('blog_images').selectAll().orderBy('path').execute(),
    filesIn(imagesDir),
    // A change logged is a change made: the counter moves with every entry of the change log.
    k.selectFrom('change_counters').selectAll().orderBy('site_id').execute(),
  ]);
  return JSON.stringify({ pages, blogs, images, files: files.sort(), changes });
}
