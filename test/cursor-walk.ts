/**
 * Walks a list the two ways pages and blogs share: every item in one offset answer, and page by
 * page by cursor. Cursor paging must reproduce the offset order.
 */
import assert from 'node:assert/strict';

/** One answer of a list: the ids it holds, in order, and its meta. */
export type ListAnswer = (query: string) => Promise<{ ids: number[]; meta: Record<string, unknown> }>;

/** Every item by offset paging, in one answer: the order cursor paging must reproduce. */
export async function idsByOffset(list: ListAnswer, filters = ''): Promise<number[]> {
  return (await list(`pageSize=999&${filters}`)).ids;
}

/** Walks the list by cursor from the first page; `between` runs after each page (the list may change meanwhile). */
export async function idsByCursor(
  list: ListAnswer,
  pageSize: number,
  filters = '',
  between?: (step: number) => Promise<void>,
): Promise<number[]> {
  const seen: number[] = [];
  let cursor: string | null = '';
  for (let step = 0; cursor !== null; step++) {
    assert.ok(step < 1000, 'the walk ends');
    const { ids, meta } = await list(`pageSize=${pageSize}&cursor=${encodeURIComponent(cursor)}&${filters}`);
    assert.deepEqual(Object.keys(meta), ['pageSize', 'nextCursor'], 'no total and no offset in cursor mode');
    assert.equal(meta.pageSize, pageSize);
    assert.ok(ids.length <= pageSize);
    cursor = meta.nextCursor as string | null;
    if (cursor !== null) assert.equal(ids.length, pageSize, 'only the last page is short');
    seen.push(...ids);
    await between?.(step);
  }
  return seen;
}
