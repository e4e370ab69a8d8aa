/**
 * Counters shared by the workers of one machine (WORKERS > 1 without Redis): the primary process
 * keeps each window's count, and a worker asks it over the cluster's IPC channel. So that a
 * request far from its quota needs no message, the primary lends a worker a share of what is left
 * (a lease: hits the worker may count on its own), and only while more than half the quota is
 * left; past that, every hit is counted by the primary, one at a time, so no quota is exceeded by
 * any number of workers. A lease is counted as used when it is lent, and what a worker has not
 * used within LEASE_MS is given back. Worst case, a worker's unused lease makes another refuse
 * early, for at most LEASE_MS.
 */
import type { Hit, RateLimitStore } from './rate-limit.js';

const CHANNEL = 'cms-rate-limit';
/** A lease not used within this long is given back. */
const LEASE_MS = 100;
/** The largest lease: keeps the count the RateLimit header shows near the truth under a large quota. */
const LEASE_MAX = 1000;

type Ask =
  | { op: 'hit'; key: string; windowSeconds: number; quota: number }
  /** `endsAt`: the window the hits were counted in, when the worker knows it; a give-back for another window is dropped. */
  | { op: 'give-back'; key: string; amount: number; endsAt?: number }
  | { op: 'reset'; key: string };
interface Request {
  channel: typeof CHANNEL;
  id: number;
  ask: Ask;
}
interface Answer {
  channel: typeof CHANNEL;
  id: number;
  count: number;
  lease: number;
  endsAt: number;
}

const isRequest = (m: unknown): m is Request => (m as Request | undefined)?.channel === CHANNEL && 'ask' in (m as Request);
const isAnswer = (m: unknown): m is Answer => (m as Answer | undefined)?.channel === CHANNEL && 'count' in (m as Answer);

/** What the primary needs of a worker (node:cluster's Worker): to answer it while it is there. */
export interface ClusterWorker {
  isConnected(): boolean;
  send(message: Answer): unknown;
}

/** The primary's side: the counts, answering every worker's asks. `workers()` says how many share them. */
export function serveClusterRateLimits(
  cluster: { on(event: 'message', listener: (worker: ClusterWorker, message: unknown) => void): unknown },
  workers: () => number,
): void {
  const windows = new Map<string, { count: number; endsAt: number }>();
  let sweepAt = 0;
  cluster.on('message', (worker, message) => {
    if (!isRequest(message)) return;
    const { ask, id } = message;
    const now = Date.now();
    if (now >= sweepAt) {
      for (const [k, w] of windows) if (w.endsAt <= now) windows.delete(k);
      sweepAt = now + 60_000;
    }
    let window = windows.get(ask.key);
    if (ask.op === 'reset') {
      windows.delete(ask.key);
      return;
    }
    if (ask.op === 'give-back') {
      // A share lent in a window that has ended since is not taken off the next window's count.
      const current = window && window.endsAt > now && (ask.endsAt === undefined || ask.endsAt === window.endsAt);
      if (current) window!.count = Math.max(0, window!.count - ask.amount);
      return;
    }
    if (!window || window.endsAt <= now) {
      window = { count: 0, endsAt: now + ask.windowSeconds * 1000 };
      windows.set(ask.key, window);
    }
    window.count += 1;
    const left = ask.quota - window.count;
    const lease = left > ask.quota / 2 ? Math.min(LEASE_MAX, Math.floor(left / (4 * Math.max(1, workers())))) : 0;
    const count = window.count;
    window.count += lease;
    const answer: Answer = { channel: CHANNEL, id, count, lease, endsAt: window.endsAt };
    if (worker.isConnected()) worker.send(answer);
  });
}

/** A worker's line to the primary: the process's IPC channel, or another in a test. */
export interface Channel {
  send(message: Request): void;
  onAnswer(listener: (message: unknown) => void): void;
  onGone(listener: () => void): void;
}

const processChannel = (): Channel => ({
  send: (message) => process.send?.(message),
  onAnswer: (listener) => process.on('message', listener),
  onGone: (listener) => process.on('disconnect', listener),
});

/**
 * A worker's side. `fallback` counts while the primary is gone (the worker is then shutting down).
 * A hit within a lease answers at once, without a promise.
 */
export function clusterRateLimits(fallback: RateLimitStore, channel: Channel = processChannel()): RateLimitStore {
  const leases = new Map<string, { lease: number; count: number; endsAt: number; lentAt: number }>();
  const waiting = new Map<number, (answer: Answer | undefined) => void>();
  let nextId = 1;
  let gone = false;
  channel.onAnswer((message) => {
    if (!isAnswer(message)) return;
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  });
  channel.onGone(() => {
    gone = true;
    for (const resolve of waiting.values()) resolve(undefined);
    waiting.clear();
  });
  const ask = (a: Ask): Promise<Answer | undefined> => {
    if (gone) return Promise.resolve(undefined);
    const id = nextId++;
    return new Promise((resolve) => {
      waiting.set(id, resolve);
      channel.send({ channel: CHANNEL, id, ask: a });
    });
  };
  /** Asks that need no answer. */
  const tell = (a: Ask): void => {
    if (!gone) channel.send({ channel: CHANNEL, id: 0, ask: a });
  };
  // Unused leases go back, so that another worker is not refused for hits nobody made.
  let timer: NodeJS.Timeout | undefined;
  const giveBackLater = () => {
    timer ??= setInterval(() => {
      const now = Date.now();
      for (const [key, l] of leases) {
        if (l.endsAt <= now) leases.delete(key);
        else if (now - l.lentAt >= LEASE_MS) {
          if (l.lease > 0) tell({ op: 'give-back', key, amount: l.lease, endsAt: l.endsAt });
          leases.delete(key);
        }
      }
      if (leases.size === 0) {
        clearInterval(timer);
        timer = undefined;
      }
    }, LEASE_MS);
    timer.unref();
  };
  const retryAfter = (endsAt: number, now: number) => Math.max(1, Math.ceil((endsAt - now) / 1000));
  return {
    hit(key, windowSeconds, quota = Number.POSITIVE_INFINITY) {
      const now = Date.now();
      const held = leases.get(key);
      if (held && held.endsAt > now && held.lease > 0) {
        held.lease -= 1;
        held.count += 1;
        return { count: held.count, retryAfter: retryAfter(held.endsAt, now) };
      }
      const limit = Number.isFinite(quota) ? quota : Number.MAX_SAFE_INTEGER;
      return ask({ op: 'hit', key, windowSeconds, quota: limit }).then((answer): Hit | Promise<Hit> => {
        if (!answer) return fallback.hit(key, windowSeconds, quota);
        const current = leases.get(key);
        if (current && current.endsAt === answer.endsAt) {
          current.lease += answer.lease;
          current.count = Math.max(current.count, answer.count);
        } else if (answer.lease > 0) {
          leases.set(key, { lease: answer.lease, count: answer.count, endsAt: answer.endsAt, lentAt: Date.now() });
        }
        if (answer.lease > 0) giveBackLater();
        return { count: answer.count, retryAfter: retryAfter(answer.endsAt, Date.now()) };
      });
    },
    async takeBack(key) {
      const held = leases.get(key);
      if (held && held.endsAt > Date.now()) {
        held.lease += 1;
        held.count -= 1;
        return;
      }
      tell({ op: 'give-back', key, amount: 1 });
    },
    async reset(key) {
      leases.delete(key);
      tell({ op: 'reset', key });
      await fallback.reset(key);
    },
    async close() {
      if (timer) clearInterval(timer);
      leases.clear();
      await fallback.close();
    },
  };
}
