/**
 * Lists of a resource with stored records (pages, blogs): an offset window with its total, or a
 * keyset page after a cursor, each read along the index of the list's order
 * (stored-resource.ts), with the fields the client chose.
 */
import { type Expression, expressionBuilder, type SqlBool, sql } from 'kysely';
import { dialectOf } from '../../db/database.js';
import type { Database, DbHandle } from '../../db/schema.js';
import { counting, listTotal } from './content.queries.js';
import type { Listed } from './envelope.js';
import { drivenByIndex } from './filters.js';
import { keptListsOf, listsVersion } from './kept-lists.js';
import { chosenFields, projected } from './projection.js';
import type { ListWindow } from './schemas.js';
import type { StoredItem } from './stored.js';
import {
  type AnyResource,
  column,
  type ListKey,
  type OrderDirection,
  type SortOrder,
  type StoredTable,
  selected,
  sortOrder,
  storedText,
} from './stored-resource.js';

/**
 * The website's rows the filter finds. `byCandidates` (SQLite): the website's column is kept out
 * of every index (a unary plus), so that the rows are read by key from the filter's FTS5 list
 * (drivenByIndex) rather than by a walk of an index of the website.
 */
function filtered<F>(db: DbHandle, r: AnyResource<unknown, unknown, F>, siteId: number, filter: Partial<F>, byCandidates = false) {
  const dialect = dialectOf(db);
  const site = byCandidates ? sql<number>`+${column(r, 'site_id')}` : column(r, 'site_id');
  return db
    .selectFrom(r.table)
    .where(site, '=', siteId)
    .where((eb) => eb.and(r.conditions(eb, dialect, siteId, filter)));
}

/**
 * The query in list order. `sorted`: by sorting the rows the filter found, not by walking the
 * order's index (SQLite: a unary plus keeps the index out of the ORDER BY, and the column's
 * collation in it).
 */
function inOrder<Q extends ReturnType<typeof filtered>>(r: AnyResource, order: SortOrder, query: Q, sorted = false): Q {
  let ordered = query;
  for (const c of order.columns) {
    const by = sorted ? sql`+${column(r, c.column)}` : column(r, c.column);
    ordered = (c.desc ? ordered.orderBy(by, 'desc') : ordered.orderBy(by)) as Q;
  }
  return ordered;
}

/**
 * The list's columns: id, stored text (storedText), its length in bytes and its tag. Both
 * databases know a text's length in bytes without reading it (octet_length).
 */
function listed<F>(db: DbHandle, r: AnyResource<unknown, unknown, F>, query: ReturnType<typeof filtered>) {
  return query
    .select(column(r, r.id).as('id'))
    .select(storedText(db, r.table))
    .select(selected(db, [`${r.table}.etag`]))
    .select(sql<number>`octet_length(${column(r, 'record_json')})`.as('record_bytes'))
    .$castTo<StoredItem>();
}

/** The list's rows (`listed`), in list order. */
function inListOrder<F>(
  db: DbHandle,
  r: AnyResource<unknown, unknown, F>,
  siteId: number,
  filter: Partial<F>,
  order: SortOrder,
  sorted = false,
) {
  return listed(db, r, inOrder(r, order, filtered(db, r, siteId, filter), sorted));
}

/** Whether the filter lists every record of the website: no condition to test, nothing to keep. */
function unfiltered<F>(db: DbHandle, r: AnyResource<unknown, unknown, F>, siteId: number, filter: Partial<F>): boolean {
  return r.conditions(expressionBuilder<Database, StoredTable>(), dialectOf(db), siteId, filter).length === 0;
}

/**
 * An offset window of the list and the list's total; a filtered one kept (keptOrRead), and what
 * a filter finds kept apart from its windows: its total (keptTotal) and, once a client pages
 * through it, its matches in list order (keptMatches), of which each window is then a slice.
 */
export async function listRows<F>(
  db: DbHandle,
  r: AnyResource<unknown, unknown, F>,
  siteId: number,
  filter: Partial<F>,
  offset: number,
  limit: number,
  order: SortOrder = sortOrder(r),
): Promise<{ rows: StoredItem[]; total: number }> {
  // The window and its total side by side: the total of every record is a row of content_totals.
  const both = async (total: () => Promise<number>) => {
    const [rows, counted] = await Promise.all([windowRows(db, r, siteId, filter, offset, limit, order).execute(), total()]);
    return { rows, total: counted };
  };
  if (unfiltered(db, r, siteId, filter)) return both(() => listTotal(db, siteId, r.table, undefined));
  // A filtered list as the database holds it now. A filter whose total is kept was read before at
  // this version, so a client is paging through it: its matches are read once, in list order
  // (keptMatches), and each window is a slice of them read by key. Otherwise its total and window.
  const read = async (version: string, kept: 'trusted' | 'stale'): Promise<{ rows: StoredItem[]; total: number }> => {
    let stale = kept === 'stale';
    const names = countName(db, r, siteId, filter);
    const counted = stale ? undefined : (keptListsOf(db).get(names.name('total'), version)?.rest as number | undefined);
    let matches = counted === undefined ? undefined : await keptMatches(db, r, siteId, filter, order, names, version, counted, stale);
    for (let tries = 0; counted !== undefined && matches && tries < 2; tries++) {
      const ids = matches.slice(offset, offset + limit);
      const rows = await rowsByKey(db, r, siteId, ids);
      if (rows.length === ids.length) return { rows, total: matches.length };
      // A match gone since, deleted beside the service: its matches are read again.
      stale = true;
      matches = await keptMatches(db, r, siteId, filter, order, names, version, counted, stale);
    }
    const count = () => keptTotal(db, names, version, stale);
    if (dialectOf(db) !== 'sqlite') return both(count);
    // SQLite: the total first, which decides how the window is read. SQLite's planner cannot know
    // how many rows a trigram query finds, and walks the order's index testing each row against
    // the matches: cheap when matches are many (the window fills within a few entries per match),
    // but a walk of the whole website when they are few or none. Sorting the matches costs their
    // number instead; the walk costs the entries read until the window is full, about
    // (offset + limit) × rows / matches. The cheaper is taken.
    const total = await count();
    if (offset >= total) return { rows: [], total };
    const rowsOfSite = await listTotal(db, siteId, r.table, undefined);
    const sorted = total * total < (offset + limit) * rowsOfSite;
    return { rows: await windowRows(db, r, siteId, filter, offset, limit, order, sorted).execute(), total };
  };
  return keptOrRead(db, r, siteId, ['window', order.columns, offset, limit, filter], read);
}

/** Names a filter's kept figures by the query that counts it: the filter as given also holds the window and the view. */
function countName<F>(db: DbHandle, r: AnyResource<unknown, unknown, F>, siteId: number, filter: Partial<F>) {
  const count = counting(filtered(db, r, siteId, filter));
  const { sql: text, parameters } = count.compile();
  return { count, text, name: (what: string, ...more: unknown[]) => JSON.stringify([r.table, siteId, what, ...more, text, parameters]) };
}
type CountName = ReturnType<typeof countName>;

/**
 * How many index entries SQLite walks for the cost of reading one match by key: a match is a row
 * of the table, read where it lies in the file, and an entry of the order's index is read in
 * sequence with its neighbours (bench/README.md).
 */
const ENTRIES_PER_MATCH = 32;

/**
 * Every record a filter finds, as ids in list order, kept per filter and order at `version` as
 * lists are (kept-lists.ts): every window of it is then a slice read by key, and its total their
 * number. `total` is the filter's count, kept: past `matchCapacity` nothing is read. SQLite reads
 * few matches by key from the filter's FTS5 candidates and sorts them (filtered, `byCandidates`),
 * and many by a walk of the order's index, which reads no row.
 */
async function keptMatches<F>(
  db: DbHandle,
  r: AnyResource<unknown, unknown, F>,
  siteId: number,
  filter: Partial<F>,
  order: SortOrder,
  { text, name }: CountName,
  version: string,
  total: number,
  stale: boolean,
): Promise<readonly number[] | undefined> {
  const kept = keptListsOf(db);
  if (total > kept.matchCapacity) return undefined;
  const matchesName = name('matches', order.columns);
  const known = stale ? undefined : kept.get(matchesName, version);
  if (known) return known.ids;
  const byKey =
    dialectOf(db) === 'sqlite' && drivenByIndex(text) && total * ENTRIES_PER_MATCH < (await listTotal(db, siteId, r.table, undefined));
  const query = inOrder(r, order, filtered(db, r, siteId, filter, byKey), byKey).select(column(r, r.id).as('id'));
  const rows = (await query.limit(kept.matchCapacity + 1).execute()) as Array<{ id: number }>;
  // More than the count said: written beside the service since.
  if (rows.length > kept.matchCapacity) return undefined;
  const ids = rows.map((row) => row.id);
  kept.set(matchesName, version, { ids, rest: undefined });
  kept.set(name('total'), version, { ids: [], rest: ids.length });
  return ids;
}

/**
 * The number of records a filter finds, kept as its lists are (kept-lists.ts, at the `version`
 * read before it): the same for every window and order of the filter. Counted again when `stale`:
 * a kept list of the version has lost a record, so the database was changed beside the service.
 */
async function keptTotal(db: DbHandle, { count, name }: CountName, version: string, stale: boolean) {
  const kept = keptListsOf(db);
  const known = stale ? undefined : kept.get(name('total'), version);
  if (known) return known.rest as number;
  const total = Number((await count.executeTakeFirstOrThrow()).total);
  kept.set(name('total'), version, { ids: [], rest: total });
  return total;
}

/**
 * A filtered list as kept (kept-lists.ts) while its website has not changed, its rows read by
 * key; or else as `read` reads it, then kept. `key` names the list within the resource and
 * website; what the list says besides its rows (a total, the next cursor) is kept with its ids.
 * `read` is given the version the list is kept at, read before it, and whether a list kept at
 * that version was found out of date (`stale`), so that what else is kept at it is read again too.
 */
async function keptOrRead<F, T extends { rows: StoredItem[] }>(
  db: DbHandle,
  r: AnyResource<unknown, unknown, F>,
  siteId: number,
  key: unknown[],
  read: (version: string, kept: 'trusted' | 'stale') => Promise<T>,
): Promise<T> {
  const kept = keptListsOf(db);
  const name = JSON.stringify([r.table, siteId, ...key]);
  const version = await listsVersion(db, siteId);
  const list = kept.get(name, version);
  if (list) {
    const rows = await rowsByKey(db, r, siteId, list.ids);
    // A record deleted beside the service since: the list is read again, whole.
    if (rows.length === list.ids.length) return { ...(list.rest as Omit<T, 'rows'>), rows } as T;
  }
  const fresh = await read(version, list ? 'stale' : 'trusted');
  const { rows, ...rest } = fresh;
  kept.set(name, version, { ids: rows.map((row) => row.id), rest });
  return fresh;
}

/** The rows of the given ids, in the order of the ids. */
async function rowsByKey<F>(db: DbHandle, r: AnyResource<unknown, unknown, F>, siteId: number, ids: readonly number[]) {
  if (ids.length === 0) return [];
  const rows = await listed(db, r, filtered(db, r, siteId, {}).where(column(r, r.id), 'in', [...ids])).execute();
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/**
 * The rows of an offset window. SQLite walks the index of the list order past the skipped rows,
 * or sorts the rows the filter found (`sorted`, listRows).
 * PostgreSQL reads the window's keys first, by an index-only scan of that index, and then only
 * those rows by primary key: the plain form sorted or read the heap row of every skipped row
 * (docs/architecture.md). On SQLite the same shape is slower, so each database runs its own.
 */
function windowRows<F>(
  db: DbHandle,
  r: AnyResource<unknown, unknown, F>,
  siteId: number,
  filter: Partial<F>,
  offset: number,
  limit: number,
  order: SortOrder,
  sorted = false,
) {
  if (dialectOf(db) === 'sqlite') return inListOrder(db, r, siteId, filter, order, sorted).offset(offset).limit(limit);
  const keys = inOrder(r, order, filtered(db, r, siteId, filter).select(selected(db, [`${r.table}.${r.id}`])))
    .offset(offset)
    .limit(limit);
  // No filter on the outer read: the window's keys have been filtered already.
  return inListOrder(db, r, siteId, {}, order).where(column(r, r.id), '=', sql<number>`any(array(${keys}))`);
}

/** Which rows follow `after` in list order, as conditions, one set per range of the index read in order. */
function rangesAfter(r: AnyResource, order: SortOrder, after: ListKey): Expression<SqlBool>[][] {
  const columns = order.columns;
  const refs = columns.map((c) => column(r, c.column));
  const desc = columns[0]?.desc === true;
  // One column (the id): a plain comparison, which both databases read as a range of the index.
  if (columns.length === 1) return [[sql<SqlBool>`${refs[0]} ${sql.raw(desc ? '<' : '>')} ${after[0]}`]];
  // Every column the same way: one row value says "after", a single range of the index.
  if (columns.every((c) => (c.desc === true) === desc)) {
    return [[sql<SqlBool>`(${sql.join(refs)}) ${sql.raw(desc ? '<' : '>')} (${sql.join([...after])})`]];
  }
  // Mixed directions: no row value says "after". What follows is, from the last column to the
  // first, the rows equal on the columns before it and past the key on it. (One OR condition
  // would scan every earlier row of the first column's value.)
  return columns.map((_, at) => {
    const i = columns.length - 1 - at;
    const equal = refs.slice(0, i).map((ref, j) => sql<SqlBool>`${ref} = ${after[j]}`);
    return [...equal, sql<SqlBool>`${refs[i]} ${sql.raw(columns[i]!.desc ? '<' : '>')} ${after[i]}`];
  });
}

/**
 * Keyset paging: up to `limit` records after `after` (from the start when null), and the key of
 * the last one when more follow (null on the last page). Each query is a range of the index of
 * the list order: no count, no sort, no earlier row read. The ranges are read one after another
 * until the page is full. A filtered page is kept (keptOrRead): a filter that matches a share of
 * the website is tested against all its matches, whose number grows with the website.
 */
export async function listRowsAfter<F>(
  db: DbHandle,
  r: AnyResource<unknown, unknown, F>,
  siteId: number,
  filter: Partial<F>,
  after: ListKey | null,
  limit: number,
  order: SortOrder = sortOrder(r),
): Promise<{ rows: StoredItem[]; next: ListKey | null }> {
  // The page as the database holds it now.
  const read = async (): Promise<{ rows: StoredItem[]; next: ListKey | null }> => {
    const rows: Array<StoredItem & Record<string, number | string>> = [];
    // The key is selected by name, whatever else the list selects: the next cursor is made of it.
    // The id is selected as `id` already.
    const keyColumns = order.columns.filter((c) => c.column !== r.id).map((c) => `${r.table}.${c.column}`);
    // One more than asked says whether a next page exists.
    for (const range of after ? rangesAfter(r, order, after) : [[]]) {
      if (rows.length > limit) break;
      let query = inListOrder(db, r, siteId, filter, order);
      if (keyColumns.length > 0) query = query.select(selected(db, keyColumns));
      for (const condition of range) query = query.where(condition);
      rows.push(...((await query.limit(limit + 1 - rows.length).execute()) as typeof rows));
    }
    if (rows.length <= limit) return { rows, next: null };
    rows.length = limit;
    const last = rows[limit - 1]!;
    return { rows, next: order.columns.map((c) => (c.column === r.id ? last.id : last[c.column]!)) };
  };
  if (unfiltered(db, r, siteId, filter)) return read();
  return keptOrRead(db, r, siteId, ['after', order.columns, after, limit, filter], read);
}

/** How a list is shown, as its query string asks: the order, its direction, and the fields. */
interface ListView {
  readonly orderBy?: string | undefined;
  /** orderBy as the hosted original's examples spell it; orderBy wins when both are sent. */
  readonly orderby?: string | undefined;
  readonly orderDirection?: OrderDirection | undefined;
  readonly fields?: string | undefined;
  readonly allFields?: string | undefined;
}

/**
 * A list of stored records: the route joins their texts, the list's ETag comes from their tags
 * (and the fields chosen, which change the bytes but not the tags).
 */
export async function listStored<F>(
  db: DbHandle,
  r: AnyResource<unknown, unknown, F>,
  siteId: number,
  filter: Partial<F>,
  window: ListWindow,
  view: ListView = {},
): Promise<Listed<StoredItem>> {
  const { pageSize } = window;
  const order = sortOrder(r, view.orderBy ?? view.orderby, view.orderDirection);
  // Checked before any query: an unknown field name is a 400 whatever the list holds.
  const fields = chosenFields(r.fields, view);
  const shown = (rows: StoredItem[]) => (fields ? { records: projected(rows, fields), fields } : { records: rows });
  if ('cursor' in window) {
    const { rows, next } = await listRowsAfter(db, r, siteId, filter, order.cursor.decode(window.cursor), pageSize, order);
    return { ...shown(rows), pageSize, nextCursor: next && order.cursor.encode(next) };
  }
  const { offset } = window;
  const { rows, total } = await listRows(db, r, siteId, filter, offset, pageSize, order);
  return { ...shown(rows), total, offset, pageSize };
}
