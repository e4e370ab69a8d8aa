/**
 * Checks of a list's offset windows that pages and blogs share: each window is the same slice of
 * the whole list, and on PostgreSQL the window's keys come from an index-only scan first
 * (listWindow in each repository).
 */
import assert from 'node:assert/strict';

/** One answer of a list: the ids it holds, in order, and its meta.total. */
export type ListIds = (query: string) => Promise<{ ids: number[]; total: unknown }>;

/** For each filter set, windows at the start, inside, across the end and past it equal slices of the whole list. */
export async function assertOffsetWindows(list: ListIds, filterSets: readonly string[]): Promise<void> {
  for (const filters of filterSets) {
    const all = (await list(`pageSize=999&${filters}`)).ids;
    for (const [offset, size] of [
      [0, 5],
      [3, 7],
      [all.length - 2, 5],
      [all.length, 5],
    ] as const) {
      const window = await list(`offset=${offset}&pageSize=${size}&${filters}`);
      assert.deepEqual(window.ids, all.slice(offset, offset + size), `${filters} offset=${offset} pageSize=${size}`);
      assert.equal(window.total, all.length, `${filters} offset=${offset}: total`);
    }
  }
}

/**
 * The plan of an offset window's rows query: SQLite searches the index of the list's order; PostgreSQL
 * reads the skipped rows as index entries only, in the InitPlan, and then the window's rows by
 * key (which index serves that outer read depends on the table's statistics).
 */
export function assertWindowPlan(
  plan: string,
  dialect: 'sqlite' | 'postgres',
  table: string,
  key: string,
  index = `${table}_site_order`,
): void {
  if (dialect === 'sqlite') {
    assert.match(plan, new RegExp(`^SEARCH ${table} USING (COVERING )?INDEX ${index} \\(site_id=\\?\\)$`), plan);
    return;
  }
  assert.match(plan, new RegExp(`InitPlan[\\s\\S]*Limit[\\s\\S]*Index Only Scan (Backward )?using ${index} on ${table} ${table}_1`), plan);
  assert.match(plan, new RegExp(`\\(${key} = ANY`), plan);
}
