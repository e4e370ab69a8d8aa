import type { DbHandle } from '../../db/schema.js';

/** How often the waited-on websites' counters are read: one query for all of them. */
const POLL_MS = 100;

interface Waiter {
  readonly after: number;
  readonly wake: () => void;
}

/**
 * The long-polls of one process, waiting for their websites' next change. One timer reads the
 * change counters of every website someone waits on, in one query by key, every POLL_MS, and wakes
 * the waits whose website has passed the number they wait after. The counter is read from the
 * database, so a change committed through another node wakes them as surely as one made here; a
 * thousand waits cost one query per tick, not a thousand. Nothing is kept once nobody waits.
 */
export class FeedWatch {
  readonly #db: DbHandle;
  readonly #waiting = new Map<number, Set<Waiter>>();
  #timer: NodeJS.Timeout | undefined;

  constructor(db: DbHandle) {
    this.#db = db;
  }

  /** Resolves once website `siteId` has a change numbered above `after`, or after `ms`, or when closed. */
  next(siteId: number, after: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let timeout: NodeJS.Timeout | undefined;
      const waiter: Waiter = {
        after,
        wake: () => {
          clearTimeout(timeout);
          this.#forget(siteId, waiter);
          resolve();
        },
      };
      timeout = setTimeout(waiter.wake, ms);
      const site = this.#waiting.get(siteId) ?? new Set<Waiter>();
      this.#waiting.set(siteId, site);
      site.add(waiter);
      this.#timer ??= setInterval(() => void this.#poll(), POLL_MS);
    });
  }

  /** Wakes every wait (the server is closing): each answers with what it has. */
  close(): void {
    for (const site of [...this.#waiting.values()]) for (const waiter of [...site]) waiter.wake();
  }

  #forget(siteId: number, waiter: Waiter): void {
    const site = this.#waiting.get(siteId);
    site?.delete(waiter);
    if (site?.size === 0) this.#waiting.delete(siteId);
    if (this.#waiting.size === 0 && this.#timer) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  async #poll(): Promise<void> {
    const sites = [...this.#waiting.keys()];
    if (sites.length === 0) return;
    let rows: { site_id: number; last_seq: number }[];
    try {
      rows = await this.#db.selectFrom('change_counters').select(['site_id', 'last_seq']).where('site_id', 'in', sites).execute();
    } catch {
      // The database is away for a moment: the waits go on until it answers or their time is up.
      return;
    }
    for (const { site_id, last_seq } of rows) {
      for (const waiter of [...(this.#waiting.get(site_id) ?? [])]) if (last_seq > waiter.after) waiter.wake();
    }
  }
}
