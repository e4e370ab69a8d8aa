import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { type TestContext, test } from 'node:test';
import { type Channel, type ClusterWorker, clusterRateLimits, serveClusterRateLimits } from './cluster-rate-limits.js';
import { memoryRateLimits } from './memory-rate-limits.js';
import type { Hit, RateLimitStore } from './rate-limit.js';

/** What the primary sent a worker: the count of the hit it counted, and the share it lent. */
interface Answer {
  count: number;
  lease: number;
  endsAt: number;
}

interface Asked {
  op: 'hit' | 'give-back' | 'reset';
  amount?: number;
}

/** One worker of the machine: its store, what it asked the primary and what it was answered. */
interface TestWorker {
  readonly store: RateLimitStore;
  readonly asked: Asked[];
  readonly answers: Answer[];
  /** The worker goes away: its channel closes, the primary no longer counts it among its workers. */
  exit(): void;
}

/**
 * A machine in one process: the primary's side and `count` workers' sides, joined by in-memory
 * channels that deliver each message a microtask later, in order, as the cluster's IPC delivers
 * them after the sender's code has run. Every test mocks Date and setInterval, so a lease is
 * given back only when the test moves the clock.
 */
function machine(t: TestContext, count: number) {
  t.mock.timers.enable({ apis: ['Date', 'setInterval'], now: 0 });
  const primary = new EventEmitter();
  let alive = count;
  serveClusterRateLimits(primary, () => alive);
  let inFlight = 0;
  let settled: Array<() => void> = [];
  const deliver = (send: () => void) => {
    inFlight += 1;
    queueMicrotask(() => {
      send();
      inFlight -= 1;
      if (inFlight > 0) return;
      for (const resolve of settled) resolve();
      settled = [];
    });
  };
  const connect = (): TestWorker => {
    let connected = true;
    const answered: Array<(message: unknown) => void> = [];
    const gone: Array<() => void> = [];
    const asked: Asked[] = [];
    const answers: Answer[] = [];
    const handle: ClusterWorker = {
      isConnected: () => connected,
      send(message) {
        answers.push(message);
        deliver(() => {
          if (connected) for (const listener of answered) listener(message);
        });
      },
    };
    const channel: Channel = {
      send(message) {
        asked.push({ op: message.ask.op, amount: message.ask.op === 'give-back' ? message.ask.amount : undefined });
        deliver(() => {
          if (connected) primary.emit('message', handle, message);
        });
      },
      onAnswer: (listener) => answered.push(listener),
      onGone: (listener) => gone.push(listener),
    };
    const store = clusterRateLimits(memoryRateLimits(), channel);
    t.after(() => store.close());
    return {
      store,
      asked,
      answers,
      exit() {
        connected = false;
        alive -= 1;
        for (const listener of gone) listener();
      },
    };
  };
  return {
    workers: Array.from({ length: count }, connect),
    /** Resolves once every message sent so far (and any it caused) has been delivered. */
    settled: (): Promise<void> => (inFlight === 0 ? Promise.resolve() : new Promise((resolve) => settled.push(resolve))),
  };
}

const WINDOW = 60;
const QUOTA = 100;
const hits = (asked: readonly Asked[]) => asked.filter((a) => a.op === 'hit').length;
const allowed = (answers: readonly Hit[]) => answers.filter((h) => h.count <= QUOTA).length;

test('two workers hitting one key, many hits in flight at once: exactly the quota is allowed across both, no more and no fewer', async (t) => {
  const { workers } = machine(t, 2);
  const answers: Hit[] = [];
  // Rounds of five hits on each worker, in turn, sent without waiting for one another, so that
  // answers (and the shares they lend) arrive while other hits of the same worker wait for theirs.
  for (let round = 0; round < 30; round++) {
    const sent = Array.from({ length: 5 }, () => workers.map((w) => w.store.hit('k', WINDOW, QUOTA))).flat();
    answers.push(...(await Promise.all(sent)));
  }
  assert.equal(answers.length, 300);
  assert.equal(allowed(answers), QUOTA);
  assert.ok(
    workers.every((w) => w.answers.some((a) => a.lease > 0)),
    'both workers were lent shares, so the total is not the primary counting alone',
  );
  assert.ok(
    workers.every((w) => w.answers.some((a) => a.count <= QUOTA)),
    'both workers had hits allowed',
  );
});

test('shares are lent only while more than half the quota is left; in the last half every hit is counted by the primary', async (t) => {
  const { workers } = machine(t, 2);
  const [a, b] = workers as [TestWorker, TestWorker];
  const first = await a.store.hit('k', WINDOW, QUOTA);
  assert.equal(first.count, 1);
  // 99 left of 100, shared by two workers: a quarter of each one's half, 99 / (4 × 2).
  assert.deepEqual(
    a.answers.map((x) => x.lease),
    [12],
  );
  const sync = a.store.hit('k', WINDOW, QUOTA);
  assert.ok(!(sync instanceof Promise), 'a hit within a share is answered at once');
  assert.equal(hits(a.asked), 1, 'and sends the primary nothing');

  // One hit at a time, in turn, until the quota is spent.
  let total = 2;
  for (let turn = 0; total < QUOTA; turn++) {
    const hit = await (turn % 2 === 0 ? b : a).store.hit('k', WINDOW, QUOTA);
    assert.ok(hit.count <= QUOTA, `hit ${total + 1} is allowed`);
    total += 1;
  }
  const answered = [...a.answers, ...b.answers];
  for (const answer of answered) {
    if (answer.lease > 0) assert.ok(QUOTA - answer.count > QUOTA / 2, `a share lent at count ${answer.count}`);
  }
  const lastHalf = answered.filter((x) => QUOTA - x.count <= QUOTA / 2);
  assert.ok(lastHalf.length > 0);
  assert.ok(
    lastHalf.every((x) => x.lease === 0),
    'no share is lent with half the quota or less left',
  );
  // Every unit the primary counted is a hit it answered or a share it lent: the quota, exactly.
  const lent = answered.reduce((sum, x) => sum + x.lease, 0);
  assert.equal(answered.length + lent, QUOTA);

  // Past the quota too, each hit goes to the primary and is refused by it.
  for (const w of [a, b]) {
    const before = hits(w.asked);
    const hit = w.store.hit('k', WINDOW, QUOTA);
    assert.ok(hit instanceof Promise, 'no share is held: the primary is asked');
    assert.equal((await hit).count, QUOTA + (w === a ? 1 : 2));
    assert.equal(hits(w.asked), before + 1);
  }
});

test('a share a worker leaves unused is given back after 100 ms, and another worker may then spend it', async (t) => {
  const { workers, settled } = machine(t, 2);
  const [a, b] = workers as [TestWorker, TestWorker];
  await a.store.hit('k', WINDOW, QUOTA);
  const share = a.answers[0]!.lease;
  assert.ok(share > 0);
  const answers: Hit[] = [];
  while (answers.length === 0 || answers.at(-1)!.count <= QUOTA) answers.push(await b.store.hit('k', WINDOW, QUOTA));
  assert.equal(allowed(answers), QUOTA - 1 - share, "b is refused while a's share is out");

  t.mock.timers.tick(99);
  assert.ok(!a.asked.some((x) => x.op === 'give-back'), 'kept for 100 ms');
  t.mock.timers.tick(1);
  assert.deepEqual(
    a.asked.filter((x) => x.op === 'give-back'),
    [{ op: 'give-back', amount: share }],
  );
  await settled();
  // b's refused hit counted too, as every store counts a refused hit: the share less that one.
  const after: Hit[] = [];
  for (let i = 0; i < share + 1; i++) after.push(await b.store.hit('k', WINDOW, QUOTA));
  assert.equal(allowed(after), share - 1, 'the share given back, and no more');
});

test('a new window restores the whole quota, on every worker', async (t) => {
  const { workers } = machine(t, 2);
  const [a, b] = workers as [TestWorker, TestWorker];
  const spend = async () => {
    const answers: Hit[] = [];
    for (let i = 0; i < 80; i++) answers.push(await a.store.hit('k', WINDOW, QUOTA), await b.store.hit('k', WINDOW, QUOTA));
    return answers;
  };
  assert.equal(allowed(await spend()), QUOTA);
  t.mock.timers.tick(59_999);
  const late = await a.store.hit('k', WINDOW, QUOTA);
  assert.ok(late.count > QUOTA, 'still refused in the last millisecond of the window');
  assert.equal(late.retryAfter, 1);
  t.mock.timers.tick(1);
  const fresh = await b.store.hit('k', WINDOW, QUOTA);
  assert.equal(fresh.count, 1, 'counted from one in the new window');
  assert.equal(fresh.retryAfter, WINDOW);
  assert.equal(allowed(await spend()) + 1, QUOTA, 'the new window allows the quota again, exactly');
});

test('a worker that goes away: its waiting hits are counted by its fallback, and its unused share stays counted until the window ends', async (t) => {
  const { workers, settled } = machine(t, 2);
  const [a, b] = workers as [TestWorker, TestWorker];
  await a.store.hit('k', WINDOW, QUOTA);
  const share = a.answers[0]!.lease;
  const used = 3;
  for (let i = 0; i < used; i++) await a.store.hit('k', WINDOW, QUOTA);

  // The channel closes while a hit of another key waits for the primary's answer.
  const waiting = a.store.hit('other', WINDOW, QUOTA);
  a.exit();
  assert.deepEqual(await waiting, { count: 1, retryAfter: WINDOW }, 'answered by the fallback, not left waiting');
  const later = a.store.hit('other', WINDOW, QUOTA);
  assert.equal((await later).count, 2, 'and the fallback keeps counting for it');
  const asked = a.asked.length;
  t.mock.timers.tick(100);
  await settled();
  assert.equal(a.asked.length, asked, 'a worker gone sends nothing, its share included');

  // The primary counted the share as used when it lent it: the quota is never exceeded, and the
  // other worker cannot have it back in this window.
  const answers: Hit[] = [];
  for (let i = 0; i < QUOTA; i++) answers.push(await b.store.hit('k', WINDOW, QUOTA));
  assert.equal(allowed(answers), QUOTA - 1 - share, `${share - used} unused units stay counted`);

  t.mock.timers.tick(WINDOW * 1000);
  const next: Hit[] = [];
  for (let i = 0; i < QUOTA + 1; i++) next.push(await b.store.hit('k', WINDOW, QUOTA));
  assert.equal(allowed(next), QUOTA, 'the next window has the whole quota');
});

test('answers give the RateLimit fields what they need: the count never falls within a window, and every worker tells the same reset', async (t) => {
  const { workers } = machine(t, 2);
  const [a, b] = workers as [TestWorker, TestWorker];
  assert.equal((await a.store.hit('k', WINDOW, QUOTA)).retryAfter, WINDOW, 'the first hit opens the window');
  // Half the window later (a's share given back meanwhile), shares lent now end with that window.
  t.mock.timers.tick(30_000);
  const seen = new Map<TestWorker, Hit[]>([
    [a, []],
    [b, []],
  ]);
  let atOnce = 0;
  for (let i = 0; i < 60; i++) {
    for (const w of [a, b]) {
      const pending = w.store.hit('k', WINDOW, QUOTA);
      if (!(pending instanceof Promise)) atOnce += 1;
      const hit = await pending;
      seen.get(w)!.push(hit);
      assert.equal(hit.retryAfter, WINDOW - 30, 'seconds to the end of the one window the primary opened, from a share or not');
    }
  }
  assert.ok(atOnce > 0, 'some hits were answered from a share');
  for (const [w, answers] of seen) {
    const counts = answers.map((h) => h.count);
    for (let i = 1; i < counts.length; i++) assert.ok(counts[i]! > counts[i - 1]!, `worker ${w === a ? 'a' : 'b'}: the count rises`);
    const refused = answers.filter((h) => h.count > QUOTA);
    assert.ok(refused.length > 0, 'each worker was refused past the quota');
    assert.equal(
      answers.indexOf(refused[0]!),
      answers.length - refused.length,
      'once refused, refused for the rest of the window: remaining stays 0',
    );
  }
  assert.equal(allowed([...seen.values()].flat()) + 1, QUOTA);
});

test('a share given back after its window ended is not taken off the next window', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 0 });
  const primary = new EventEmitter();
  serveClusterRateLimits(primary, () => 2);
  const answers: Answer[] = [];
  const worker: ClusterWorker = { isConnected: () => true, send: (message) => answers.push(message) };
  let id = 0;
  const ask = (ask: object) => primary.emit('message', worker, { channel: 'cms-rate-limit', id: ++id, ask: { key: 'k', ...ask } });
  ask({ op: 'hit', windowSeconds: WINDOW, quota: QUOTA });
  const lent = answers.at(-1)!;
  assert.ok(lent.lease > 0);
  // The window ends while the share is out; another worker's hit opens the next one.
  t.mock.timers.tick(WINDOW * 1000);
  ask({ op: 'hit', windowSeconds: WINDOW, quota: QUOTA });
  const next = answers.at(-1)!;
  assert.notEqual(next.endsAt, lent.endsAt);
  // The first share comes back late, naming its window: the next window's count is left as it is.
  ask({ op: 'give-back', amount: lent.lease, endsAt: lent.endsAt });
  ask({ op: 'hit', windowSeconds: WINDOW, quota: QUOTA });
  assert.equal(answers.at(-1)!.count, next.count + next.lease + 1);
  // A share of the current window given back is taken off.
  ask({ op: 'give-back', amount: answers.at(-1)!.lease, endsAt: next.endsAt });
  const before = answers.at(-1)!;
  ask({ op: 'hit', windowSeconds: WINDOW, quota: QUOTA });
  assert.equal(answers.at(-1)!.count, before.count + 1);
});
