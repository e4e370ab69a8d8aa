/**
 * Filtered lists as this process last read them, each with the version of its website it was read
 * at: the website's change number and the migrations applied. Every write of a page or blog takes
 * its website's next change number in the write's own transaction (change-log.ts), on whichever
 * node makes it, and a migration may rewrite rows without one; so a list read at the version the
 * database still holds is the list as it stands: it is used again, and read afresh once the
 * version has moved. What a filter costs grows with its matches (the total counts every one); a
 * list used again costs the read of the version and its window's rows by key. A change made beside
 * the service (SQL by hand) is seen at the website's next change.
 */
import { sql } from 'kysely';
import { MIGRATIONS_APPLIED } from '../../db/migrate.js';
import type { DbHandle } from '../../db/schema.js';

/** How many lists one process keeps; the one used least recently goes first. */
const KEPT_LISTS = 500;
/** How many ids the kept lists hold together (a filter's every match may be kept, stored-lists.ts): about 8 bytes each. */
const KEPT_IDS = 1_000_000;
/** The most matches of one filter kept as ids (stored-lists.ts, keptMatches). */
const MATCHES_KEPT = 100_000;

/** A list's records, as their ids in list order, and what else it says (its total, its next cursor). */
export interface KeptList {
  readonly ids: readonly number[];
  readonly rest: unknown;
}

export class KeptLists {
  readonly #lists = new Map<string, KeptList & { readonly version: string }>();
  #ids = 0;

  constructor(
    readonly capacity = KEPT_LISTS,
    readonly idCapacity = KEPT_IDS,
    readonly matchCapacity = MATCHES_KEPT,
  ) {}

  /** The list kept under `key` if it was read at `version` (listsVersion). */
  get(key: string, version: string): KeptList | undefined {
    const kept = this.#lists.get(key);
    if (!kept) return undefined;
    this.#lists.delete(key);
    if (kept.version !== version) {
      this.#ids -= kept.ids.length;
      return undefined;
    }
    // Kept again at the back of the map's order: the front holds the lists used least recently.
    this.#lists.set(key, kept);
    return kept;
  }

  /**
   * Keeps a list read at `version`. The version must have been read before the list: a write
   * that commits in between then leaves the list newer than its version, which a later reader
   * never takes for current, since it finds the change number that write took.
   */
  set(key: string, version: string, list: KeptList): void {
    this.#forget(key);
    this.#lists.set(key, { ...list, version });
    this.#ids += list.ids.length;
    while (this.#lists.size > this.capacity || this.#ids > this.idCapacity) this.#forget(this.#lists.keys().next().value!);
  }

  #forget(key: string): void {
    const kept = this.#lists.get(key);
    if (!kept) return;
    this.#lists.delete(key);
    this.#ids -= kept.ids.length;
  }

  /** Forgets every list: for a change the version does not show (a migration run by hand). */
  clear(): void {
    this.#lists.clear();
    this.#ids = 0;
  }

  get size(): number {
    return this.#lists.size;
  }

  /** The ids the kept lists hold together. */
  get ids(): number {
    return this.#ids;
  }
}

const byHandle = new WeakMap<DbHandle, KeptLists>();

/**
 * The lists kept for a database handle: the app's (a transaction's handle has its own, gone with
 * it, so what a transaction reads of its own writes is never kept for others). `made`: these, from
 * now on (a test's smaller ones).
 */
export function keptListsOf(db: DbHandle, made?: KeptLists): KeptLists {
  if (made) byHandle.set(db, made);
  let kept = byHandle.get(db);
  if (!kept) {
    kept = new KeptLists();
    byHandle.set(db, kept);
  }
  return kept;
}

/** The version of a website that its kept lists are read at (above). */
export async function listsVersion(db: DbHandle, siteId: number): Promise<string> {
  const { rows } = await sql<{ seq: number | null; migrations: number | string }>`select
      (select last_seq from change_counters where site_id = ${siteId}) as seq, ${MIGRATIONS_APPLIED} as migrations`.execute(db);
  return `${rows[0]?.seq ?? 0}/${rows[0]?.migrations}`;
}
