/**
 * What every resource with stored records does the same way (pages, blogs): read a record as
 * stored or as an object, find it for a write, store it again after the write, delete it, and
 * list it by offset (with its total) or by cursor. Each resource describes itself once
 * (`storedResource`): its table, id column, catalogue columns, record builder, list order and
 * filter conditions; its service keeps its own rules (filters, what a write converts and checks,
 * what a delete refuses). One module, so that a GET by id runs through one shared file.
 */
import { type Compilable, type Expression, type ExpressionBuilder, expressionBuilder, type SqlBool, sql } from 'kysely';
import { type DialectName, dialectOf } from '../../db/database.js';
import { preparedLookup } from '../../db/prepared-lookup.js';
import type { Database, DbHandle } from '../../db/schema.js';
import { NotFoundError } from '../../errors.js';
import type { Precondition } from '../../http/etag.js';
import { andThen, type MaybePromise } from '../../maybe-async.js';
import { listTotal } from './content.queries.js';
import { type KeyPart, type KeysetCursor, keysetCursor } from './cursor.js';
import type { Listed } from './envelope.js';
import type { ListWindow } from './schemas.js';
import { type StoredItem, type StoredRecord, storedRecord } from './stored.js';

/** The tables whose rows belong to a website and keep their record's JSON text and ETag. */
type StoredTable = {
  [T in keyof Database]: Database[T] extends { site_id: number; record_json: unknown; etag: unknown } ? T : never;
}[keyof Database];

/** What preparedLookup takes from a by-id query builder: a query it can compile, or run through Kysely. */
type StoredByIdQuery = Compilable & { executeTakeFirst(): Promise<StoredRecord | undefined> };

/** A column of a list's order, in index order; the last one is the id, so the order is total. */
interface OrderColumn {
  readonly column: string;
  /** What the cursor accepts back for it. */
  readonly type: KeyPart;
  readonly desc?: boolean;
}

/** A record's place in list order: the values of the order's columns. */
type ListKey = readonly (number | string)[];

/**
 * What a resource is, to the shared code: everything else about it stays in its own folder.
 * `toRecord` and `conditions` are methods so that a resource's own row and filter types stand in
 * where the shared code knows neither.
 */
interface StoredResource<T extends StoredTable, Row, R, F> {
  /** Its name in messages ("There is no page 3 on this website."). */
  readonly noun: string;
  readonly table: T;
  /** The primary key column: a record's id. */
  readonly id: string;
  /** The catalogue's columns: what a record is built from. */
  readonly columns: readonly string[];
  /** Builds a record from the row's catalogue columns (the resource's record builder). */
  toRecord(row: Row): R;
  /**
   * The by-id read of the two stored columns, a top-level function of the resource's:
   * preparedLookup keeps one prepared statement per builder, found by the builder's identity.
   */
  readonly storedById: (db: DbHandle, args: { siteId: number; id: number }) => StoredByIdQuery;
  /** The list order: the columns of the index (site_id, …) that lists read in order. */
  readonly order: readonly OrderColumn[];
  /** How a filter narrows the website's rows: no conditions when the list is every record of the website. */
  conditions(eb: ExpressionBuilder<Database, T>, dialect: DialectName, siteId: number, filter: Partial<F>): Expression<SqlBool>[];
  /** The list's cursors: the values of `order` of the last record shown, tagged as this list's. */
  readonly cursor: KeysetCursor<ListKey>;
}

/** A resource's description, with its cursors made from its order's columns under `cursorTag`. */
export function storedResource<T extends StoredTable, Row, R, F>(
  spec: Omit<StoredResource<T, Row, R, F>, 'cursor'> & { readonly cursorTag: string },
): StoredResource<T, Row, R, F> {
  const { cursorTag, ...resource } = spec;
  return {
    ...resource,
    cursor: keysetCursor(
      cursorTag,
      resource.order.map((c) => c.type),
    ),
  };
}

// The shared queries are written once for every stored table, so their columns are references
// made from the description's names, which compile to the same text as Kysely's own: `sql.ref` in
// conditions and order, `db.dynamic.ref` where a column is selected under its own name.
type AnyResource<Row = unknown, R = unknown, F = unknown> = StoredResource<StoredTable, Row, R, F>;

const column = (r: AnyResource, name: string) => sql.ref(`${r.table}.${name}`);
const selected = (db: DbHandle, names: readonly string[]) => names.map((name) => db.dynamic.ref(name)) as never[];

/** One record's stored text and ETag, outside a transaction: the hottest read, a prepared statement on SQLite. */
function readStored(db: DbHandle, r: AnyResource, siteId: number, id: number): MaybePromise<StoredRecord | undefined> {
  return preparedLookup(db, r.storedById, { siteId, id });
}

/**
 * A record's columns and its stored ETag (for If-Match). `lock` takes a row lock so a check and
 * the write after it see the same row (PostgreSQL; SQLite writes are serial already).
 */
async function findRow<Row>(
  db: DbHandle,
  r: AnyResource<Row>,
  siteId: number,
  id: number,
  lock = false,
): Promise<(Row & { etag: string }) | undefined> {
  const query = db
    .selectFrom(r.table)
    .select(selected(db, [...r.columns, 'etag']))
    .where('site_id', '=', siteId)
    .where(sql.ref(r.id), '=', id);
  return (await (lock && dialectOf(db) === 'postgres' ? query.forUpdate() : query).executeTakeFirst()) as
    | (Row & { etag: string })
    | undefined;
}

/** Writes the stored record that the row's columns give (after every write, in its transaction). */
async function writeStored(db: DbHandle, r: AnyResource, siteId: number, id: number, stored: StoredRecord): Promise<void> {
  await db.updateTable(r.table).set(stored).where('site_id', '=', siteId).where(sql.ref(r.id), '=', id).execute();
}

export async function deleteRow(db: DbHandle, r: AnyResource, siteId: number, id: number): Promise<void> {
  await db.deleteFrom(r.table).where('site_id', '=', siteId).where(sql.ref(r.id), '=', id).execute();
}

function filtered<F>(db: DbHandle, r: AnyResource<unknown, unknown, F>, siteId: number, filter: Partial<F>) {
  const dialect = dialectOf(db);
  return db
    .selectFrom(r.table)
    .where(column(r, 'site_id'), '=', siteId)
    .where((eb) => eb.and(r.conditions(eb, dialect, siteId, filter)));
}

function inOrder<Q extends ReturnType<typeof filtered>>(r: AnyResource, query: Q): Q {
  let ordered = query;
  for (const c of r.order) ordered = (c.desc ? ordered.orderBy(column(r, c.column), 'desc') : ordered.orderBy(column(r, c.column))) as Q;
  return ordered;
}

/** The list's rows: id, stored text and tag, in list order. */
function inListOrder<F>(db: DbHandle, r: AnyResource<unknown, unknown, F>, siteId: number, filter: Partial<F>) {
  return inOrder(r, filtered(db, r, siteId, filter))
    .select(column(r, r.id).as('id'))
    .select(selected(db, [`${r.table}.record_json`, `${r.table}.etag`]))
    .$castTo<StoredItem>();
}

/** An offset window of the list and the list's total. */
export async function listRows<F>(
  db: DbHandle,
  r: AnyResource<unknown, unknown, F>,
  siteId: number,
  filter: Partial<F>,
  offset: number,
  limit: number,
): Promise<{ rows: StoredItem[]; total: number }> {
  const everyRecord = r.conditions(expressionBuilder<Database, StoredTable>(), dialectOf(db), siteId, filter).length === 0;
  const [rows, total] = await Promise.all([
    windowRows(db, r, siteId, filter, offset, limit).execute(),
    listTotal(db, siteId, r.table, everyRecord ? undefined : filtered(db, r, siteId, filter)),
  ]);
  return { rows, total };
}

/**
 * The rows of an offset window. SQLite walks the index of the list order past the skipped rows.
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
) {
  if (dialectOf(db) === 'sqlite') return inListOrder(db, r, siteId, filter).offset(offset).limit(limit);
  const keys = inOrder(r, filtered(db, r, siteId, filter).select(selected(db, [`${r.table}.${r.id}`])))
    .offset(offset)
    .limit(limit);
  // No filter on the outer read: the window's keys have been filtered already.
  return inListOrder(db, r, siteId, {}).where(column(r, r.id), '=', sql<number>`any(array(${keys}))`);
}

/** Which rows follow `after` in list order, as conditions, one set per range of the index read in order. */
function rangesAfter(r: AnyResource, after: ListKey): Expression<SqlBool>[][] {
  const refs = r.order.map((c) => column(r, c.column));
  const desc = r.order[0]?.desc === true;
  // Every column the same way: one row value says "after", a single range of the index.
  if (r.order.every((c) => (c.desc === true) === desc)) {
    return [[sql<SqlBool>`(${sql.join(refs)}) ${sql.raw(desc ? '<' : '>')} (${sql.join([...after])})`]];
  }
  // Mixed directions: no row value says "after". What follows is, from the last column to the
  // first, the rows equal on the columns before it and past the key on it. (One OR condition
  // would scan every earlier row of the first column's value.)
  return r.order.map((_, at) => {
    const i = r.order.length - 1 - at;
    const equal = refs.slice(0, i).map((ref, j) => sql<SqlBool>`${ref} = ${after[j]}`);
    return [...equal, sql<SqlBool>`${refs[i]} ${sql.raw(r.order[i]!.desc ? '<' : '>')} ${after[i]}`];
  });
}

/**
 * Keyset paging: up to `limit` records after `after` (from the start when null), and the key of
 * the last one when more follow (null on the last page). Each query is a range of the index of
 * the list order: no count, no sort, no earlier row read. The ranges are read one after another
 * until the page is full.
 */
export async function listRowsAfter<F>(
  db: DbHandle,
  r: AnyResource<unknown, unknown, F>,
  siteId: number,
  filter: Partial<F>,
  after: ListKey | null,
  limit: number,
): Promise<{ rows: StoredItem[]; next: ListKey | null }> {
  const rows: Array<StoredItem & Record<string, number | string>> = [];
  // One more than asked says whether a next page exists.
  for (const range of after ? rangesAfter(r, after) : [[]]) {
    if (rows.length > limit) break;
    let query = inListOrder(db, r, siteId, filter)
      // The key is selected by name, whatever else the list selects: the next cursor is made of it.
      .select(
        selected(
          db,
          r.order.map((c) => `${r.table}.${c.column}`),
        ),
      );
    for (const condition of range) query = query.where(condition);
    rows.push(...((await query.limit(limit + 1 - rows.length).execute()) as typeof rows));
  }
  if (rows.length <= limit) return { rows, next: null };
  rows.length = limit;
  const last = rows[limit - 1]!;
  return { rows, next: r.order.map((c) => last[c.column]!) };
}

// The steps the services take.

function notFound(r: AnyResource, id: number): NotFoundError {
  return new NotFoundError(`There is no ${r.noun} ${id} on this website.`);
}

/** One record as stored: its JSON text and ETag; at once when the read is (preparedLookup). */
export function getStored(db: DbHandle, r: AnyResource, siteId: number, id: number): MaybePromise<StoredRecord> {
  return andThen(readStored(db, r, siteId, id), (stored) => {
    if (!stored) throw notFound(r, id);
    return stored;
  });
}

/** One record as an object (MCP, the console): the stored text, parsed. */
export async function getRecord<R>(db: DbHandle, r: AnyResource<unknown, R>, siteId: number, id: number): Promise<R> {
  return JSON.parse((await getStored(db, r, siteId, id)).record_json) as R;
}

/**
 * The row a write or delete starts from, locked (findRow): a 404 when the website has no such
 * record, and the request's If-Match checked against its stored ETag.
 */
export async function findForWrite<Row>(
  db: DbHandle,
  r: AnyResource<Row>,
  siteId: number,
  id: number,
  precondition: Precondition | undefined,
): Promise<Row & { etag: string }> {
  const row = await findRow(db, r, siteId, id, true);
  if (!row) throw notFound(r, id);
  precondition?.(row.etag);
  return row;
}

/**
 * The last step of every write that changes the row, in its transaction: the stored record is
 * rebuilt from the row's columns as they now are, so it cannot differ from what building the
 * record from them gives.
 */
export async function storeRecord<R>(
  db: DbHandle,
  r: AnyResource<unknown, R>,
  siteId: number,
  id: number,
): Promise<{ record: R; etag: string }> {
  const row = await findRow(db, r, siteId, id);
  if (!row) throw new Error(`${r.noun} ${id} vanished inside its own write`);
  const record = r.toRecord(row);
  const stored = storedRecord(record as object);
  await writeStored(db, r, siteId, id, stored);
  return { record, etag: stored.etag };
}

/** A list of stored records: the route joins their texts, the list's ETag comes from their tags. */
export async function listStored<F>(
  db: DbHandle,
  r: AnyResource<unknown, unknown, F>,
  siteId: number,
  filter: Partial<F>,
  window: ListWindow,
): Promise<Listed<StoredItem>> {
  const { pageSize } = window;
  if ('cursor' in window) {
    const { rows, next } = await listRowsAfter(db, r, siteId, filter, r.cursor.decode(window.cursor), pageSize);
    return { records: rows, pageSize, nextCursor: next && r.cursor.encode(next) };
  }
  const { offset } = window;
  const { rows, total } = await listRows(db, r, siteId, filter, offset, pageSize);
  return { records: rows, total, offset, pageSize };
}
