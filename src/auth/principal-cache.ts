/**
 * The principal cache, which remembers what a credential proved, and the per-tick memo that keys
 * it by the SHA-256 of the credentials as sent.
 */
import type { ChangeSource } from '../db/change-source.js';
import type { MaybePromise } from '../maybe-async.js';

/**
 * The principal cache: who a credential proved to be on the last request that presented it, kept
 * per process so that a request needs no read, decoding or key check of its own to be
 * authenticated. The methods key what they keep by the SHA-256 of the credentials as sent
 * (api-key.ts, bearer.ts), so no key or token is held in the clear. Nothing kept is state
 * another node needs: each node learns of a change from the database.
 *
 * - **Any change the database's ChangeSource counts drops everything**: changes to the rows that
 *   decide access are rare (a revocation, a token's end, a connection's end), and reading again is
 *   what a request did anyway. This process's own writes are counted as their statements go out,
 *   so the request after a revocation is refused on the node that revoked; other nodes' within
 *   the time their notification takes (change-source.ts).
 * - **A read is kept only if no change was counted while it ran**: it may have seen the state
 *   before a commit, and must not be used past it.
 * - **Nothing is used while changes are not heard** (a PostgreSQL node not listening).
 * - **No value is kept longer than TTL_MS**, in case a listening connection was cut without either
 *   end noticing.
 *
 * Values that depend on the time (a token's expiry) are kept with their expiry, and the caller
 * checks it on every use.
 */
const TTL_MS = 10_000;
const MAX_ENTRIES = 10_000;

interface Entry {
  readonly value: unknown;
  readonly until: number;
}

export class PrincipalCache {
  readonly #changes: ChangeSource;
  #entries = new Map<string, Entry>();
  /** The change count the entries were read under. */
  #generation = -1;

  constructor(changes: ChangeSource) {
    this.#changes = changes;
  }

  /**
   * The value kept for `key`, at once, without a promise; or a promise of `read()`'s, kept when
   * no change was counted while it was read, for TTL_MS or until the time (ms) `until` gives for
   * it, whichever comes first: a value that stops being true at a known time is not used past it.
   */
  read<V>(key: string, read: () => MaybePromise<V | undefined>, until?: (value: V) => number | undefined): MaybePromise<V | undefined> {
    const usable = this.#changes.fresh();
    if (usable && this.#current()) {
      const entry = this.#entries.get(key);
      if (entry && entry.until > Date.now()) return entry.value as V;
    }
    return this.#readAndKeep(key, read, usable, until);
  }

  /** Whether the entries are still true: no change counted since they were read (they are dropped otherwise). */
  #current(): boolean {
    const generation = this.#changes.generation;
    if (generation === this.#generation) return true;
    this.#entries.clear();
    this.#generation = generation;
    return false;
  }

  async #readAndKeep<V>(
    key: string,
    read: () => MaybePromise<V | undefined>,
    usable: boolean,
    until: ((value: V) => number | undefined) | undefined,
  ): Promise<V | undefined> {
    const generation = this.#changes.generation;
    const value = await read();
    if (usable && value !== undefined && generation === this.#changes.generation) {
      this.#current();
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
      this.#entries.set(key, { value, until: Math.min(Date.now() + TTL_MS, until?.(value) ?? Number.POSITIVE_INFINITY) });
    }
    return value;
  }
}

/**
 * `compute` memoised for the rest of the current tick of the event loop: asked again for the same
 * key in the same tick, it answers from memory; the memory is forgotten when the tick ends
 * (`setImmediate`). For a pure function that costs more than a Map lookup and is asked many times
 * a tick under load: the SHA-256 of the credentials a request sends, which key the principal
 * cache. Under load one tick handles many requests, most with the same credentials.
 *
 * What is remembered lives no longer than the requests of that tick, which hold the same strings
 * in their headers: unlike a cache keyed by the credentials themselves, a heap snapshot taken
 * between ticks holds none of them. At most `limit` keys a tick; past that it computes every time.
 */
export function memoisePerTick<V>(compute: (key: string) => V, limit = 1024): (key: string) => V {
  let memo: Map<string, V> | undefined;
  const forget = () => {
    memo = undefined;
  };
  return (key) => {
    if (!memo) {
      memo = new Map();
      setImmediate(forget);
    }
    let value = memo.get(key);
    if (value === undefined) {
      value = compute(key);
      if (memo.size < limit) memo.set(key, value);
    }
    return value;
  };
}
