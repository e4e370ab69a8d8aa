/**
 * Concurrent writers and a follower of the change feed, for the tests of its promise that every
 * acknowledged write is seen exactly once, in seq order (src/content/history/feed.test.ts on one
 * app, test/feed.process.test.ts on two nodes). Each writer keeps to records of its own, so it
 * knows which revision each of its acknowledged writes made; the follower reads GET /api/changes
 * by nextCursor while they write.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  body: any;
}

/** One API request with the website's credentials: app.inject, or fetch to a node. */
export type Api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: object) => Promise<Answer>;

export type RecordType = 'page' | 'blog';
type Op = 'create' | 'update' | 'delete' | 'restore';

/** An entry of GET /api/changes. */
export interface FeedEntry {
  seq: number;
  type: RecordType;
  id: number;
  op: Op;
  at: string;
  actor: { kind: string; id: string; name: string };
  revision: number;
}

/** A write the API acknowledged (2xx), and the revision of its record that it made. */
export interface Acknowledged {
  type: RecordType;
  id: number;
  op: Op;
  revision: number;
}

/** The acknowledged writes of a test, from every writer; each record's revisions counted as they are made. */
export class Acknowledgements {
  readonly all: Acknowledged[] = [];
  readonly #revisions = new Map<string, number>();

  add(type: RecordType, id: number, op: Op): void {
    const key = `${type}:${id}`;
    const revision = (this.#revisions.get(key) ?? 0) + 1;
    this.#revisions.set(key, revision);
    this.all.push({ type, id, op, revision });
  }
}

function expectStatus(answer: Answer, status: number, what: string): void {
  assert.equal(answer.status, status, `${what}: ${JSON.stringify(answer.body)?.slice(0, 300)}`);
}

/** A small deterministic generator (mulberry32), so that a failing run can be told apart by its writer's seed. */
function random(seed: number): (n: number) => number {
  let state = seed >>> 0;
  return (n) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let z = Math.imul(state ^ (state >>> 15), state | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return Math.floor((((z ^ (z >>> 14)) >>> 0) / 4294967296) * n);
  };
}

/**
 * `steps` writes of pages and blogs (its blogs on `holderPage`), each awaited before the next:
 * creates, updates, deletes and restores of its own records, and now and then a write the API
 * refuses (404), which must leave no change behind.
 */
export async function runWriter(send: Api, acks: Acknowledgements, options: { seed: number; steps: number; holderPage: number }) {
  const { seed, steps, holderPage } = options;
  // A 503 is the database not answering in time on a loaded machine: nothing was written, so the
  // writer sends it again, as a client would.
  const api: Api = async (method, url, body) => {
    for (let attempt = 0; ; attempt++) {
      const answer = await send(method, url, body);
      if (answer.status !== 503 || attempt >= 20) return answer;
      await sleep(50); // a client's pause before sending again, not a wait for an event
    }
  };
  const pick = random(seed);
  const live = { page: [] as number[], blog: [] as number[] };
  const deleted = { page: [] as number[], blog: [] as number[] };
  const take = (list: number[]) => list.splice(pick(list.length), 1)[0]!;
  for (let step = 0; step < steps; step++) {
    const type: RecordType = pick(2) === 0 ? 'page' : 'blog';
    const what = `writer ${seed} step ${step}`;
    const roll = pick(20);
    if (roll === 0) {
      const refused = await api('PATCH', `/api/${type}/2147483647`, type === 'page' ? { page_summary: what } : { info_title: what });
      expectStatus(refused, 404, `${what}: update of a record that does not exist`);
    } else if (roll < 6 || live[type].length === 0) {
      const created =
        type === 'page'
          ? await api('POST', '/api/page', { page_usertitle: `Page ${seed}-${step}` })
          : await api('POST', '/api/blog', { page: holderPage, info_title: `Blog ${seed}-${step}` });
      expectStatus(created, 201, `${what}: create`);
      const id = created.body.data[0][type === 'page' ? 'page' : 'info_id'] as number;
      live[type].push(id);
      acks.add(type, id, 'create');
    } else if (roll < 14) {
      const id = live[type][pick(live[type].length)]!;
      const updated = await api('PATCH', `/api/${type}/${id}`, type === 'page' ? { page_summary: what } : { info_title: what });
      expectStatus(updated, 200, `${what}: update`);
      acks.add(type, id, 'update');
    } else if (roll < 18 || deleted[type].length === 0) {
      const id = take(live[type]);
      expectStatus(await api('DELETE', `/api/${type}/${id}`), 204, `${what}: delete`);
      deleted[type].push(id);
      acks.add(type, id, 'delete');
    } else {
      const id = take(deleted[type]);
      expectStatus(await api('POST', `/api/${type}/${id}/revisions/1/restore`), 201, `${what}: restore`);
      live[type].push(id);
      acks.add(type, id, 'restore');
    }
  }
}

/**
 * Follows the feed from its start by nextCursor, with page sizes of 1 to 5, until `writersDone`
 * and an answer asked for after that was not full: every acknowledged write has committed by then.
 * Each answer is checked against the documented shape on the way.
 */
export async function followFeed(api: Api, writersDone: () => boolean, filter = ''): Promise<FeedEntry[]> {
  const seen: FeedEntry[] = [];
  const sizes = [1, 3, 2, 5];
  let cursor: string | undefined;
  for (let round = 0; ; round++) {
    assert.ok(round < 20_000, 'the follower catches up');
    const last = writersDone();
    const pageSize = sizes[round % sizes.length]!;
    const since = cursor === undefined ? '' : `&since=${cursor}`;
    const answer = await api('GET', `/api/changes?pageSize=${pageSize}${since}${filter}`);
    if (answer.status === 503) {
      // The database could not answer in time (a loaded machine): a syncing client asks again from the same cursor.
      await sleep(50); // a client's pause before asking again, not a wait for an event
      continue;
    }
    expectStatus(answer, 200, `GET /api/changes?since=${cursor}`);
    const { data, meta } = answer.body as { data: FeedEntry[]; meta: { pageSize: number; nextCursor: string } };
    assert.equal(meta.pageSize, pageSize);
    assert.ok(data.length <= pageSize);
    assert.equal(typeof meta.nextCursor, 'string', 'nextCursor is always present');
    seen.push(...data);
    cursor = meta.nextCursor;
    if (data.length < pageSize) {
      if (last) return seen;
      await sleep(2); // a follower's pause between polls of a caught-up feed, not a wait for an event
    }
  }
}

const keyOf = (e: { type: string; id: number; revision: number; op: string }) => `${e.type} ${e.id} revision ${e.revision} ${e.op}`;

/**
 * The feed's promise: seqs strictly increasing (so none twice), and exactly the acknowledged
 * writes (those matching `only`), each with the revision it made, by one of `actorIds`.
 */
export function assertSawEachOnce(
  seen: readonly FeedEntry[],
  acks: Acknowledgements,
  actorIds: readonly string[],
  only: (a: Acknowledged) => boolean = () => true,
): void {
  for (let i = 1; i < seen.length; i++) {
    assert.ok(seen[i]!.seq > seen[i - 1]!.seq, `seq ${seen[i]!.seq} follows ${seen[i - 1]!.seq}: strictly increasing`);
  }
  const expected = acks.all.filter(only);
  assert.ok(expected.length > 0, 'there are acknowledged writes to look for');
  assert.deepEqual(seen.map(keyOf).sort(), expected.map(keyOf).sort(), 'every acknowledged write, once, and nothing else');
  for (const entry of seen) {
    assert.equal(entry.actor.kind, 'api-key');
    assert.ok(actorIds.includes(entry.actor.id), `actor ${entry.actor.id} is the writing credential`);
  }
  // A record's changes follow one another in the feed in the order they were made.
  const byRecord = new Map<string, number[]>();
  for (const e of seen) byRecord.set(`${e.type} ${e.id}`, [...(byRecord.get(`${e.type} ${e.id}`) ?? []), e.revision]);
  for (const [record, revisions] of byRecord) {
    assert.deepEqual(
      revisions,
      revisions.map((_, i) => i + 1),
      `${record}: revisions in order`,
    );
  }
}

/** Each record's revisions, as GET …/revisions lists them (newest first), are what its acknowledged writes made. */
export async function assertRevisionsListed(api: Api, acks: Acknowledgements): Promise<void> {
  const records = new Map<string, Acknowledged[]>();
  for (const a of acks.all) records.set(`${a.type}/${a.id}`, [...(records.get(`${a.type}/${a.id}`) ?? []), a]);
  for (const [record, made] of records) {
    const answer = await api('GET', `/api/${record}/revisions`);
    expectStatus(answer, 200, `GET /api/${record}/revisions`);
    assert.deepEqual(
      (answer.body.data as Array<{ revision: number; op: string }>).map(({ revision, op }) => `${revision} ${op}`),
      made.map(({ revision, op }) => `${revision} ${op}`).reverse(),
      `${record}'s revisions`,
    );
  }
}
