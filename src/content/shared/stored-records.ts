/**
 * What every resource with stored records does the same way (pages, blogs): read a record as
 * stored or as an object, find it for a write, store it again after the write, delete it, and
 * list it by offset (with its total) or by cursor. Each resource describes itself once
 * (`storedResource`): its table, id column, catalogue columns, record builder, sort keys, list
 * orders and filter conditions; its service keeps its own rules (filters, what a write converts
 * and checks, what a delete refuses). One module, so that a GET by id runs through one shared file.
 */
import { type Compilable, type Expression, type ExpressionBuilder, expressionBuilder, type SqlBool, sql } from 'kysely';
import { type DialectName, dialectOf } from '../../db/database.js';
import { preparedLookup } from '../../db/prepared-lookup.js';
import type { Database, DbHandle } from '../../db/schema.js';
import { inTransaction } from '../../db/transaction.js';
import { NotFoundError } from '../../errors.js';
import type { Precondition } from '../../http/representation.js';
import { andThen, type MaybePromise } from '../../maybe-async.js';
import { type ActorRef, type ChangeOp, type RecordType, recordChange } from '../history/change-log.js';
import { listTotal } from './content.queries.js';
import { type KeyPart, type KeysetCursor, keysetCursor } from './cursor.js';
import type { Listed } from './envelope.js';
import { lockImageReferences } from './image-references.js';
import { chosenFields, type Fields, projected } from './projection.js';
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
 * A list order a client can choose (orderBy): its columns in the order of the index that serves
 * it, each in the order's default direction. The index is (site_id, …columns): read forwards for
 * the default direction and backwards for the other, so no order is ever sorted.
 */
interface ListOrder {
  readonly columns: readonly OrderColumn[];
  /** The index that serves it, named for the query-plan tests and the docs. */
  readonly index: string;
}

/** `asc` and `desc` name the first column's direction; `reverse` is the opposite of the order's default. */
export type OrderDirection = 'asc' | 'desc' | 'reverse';

/** An order as a list reads it: its columns in the direction asked for, and its cursors. */
interface SortOrder {
  readonly columns: readonly OrderColumn[];
  readonly index: string;
  /** Cursors of this order in this direction: one given out for another is a 400 naming `cursor`. */
  readonly cursor: KeysetCursor<ListKey>;
}

/**
 * What a resource is, to the shared code: everything else about it stays in its own folder.
 * `toRecord` and `conditions` are methods so that a resource's own row and filter types stand in
 * where the shared code knows neither.
 */
interface StoredResource<T extends StoredTable, Row, R, F> {
  /** Its name in messages ("There is no page 3 on this website.") and its type in the change log. */
  readonly noun: RecordType;
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
  /** What the sort-key columns hold for a row (written beside the stored record: storeRecord). */
  sortKeys(row: NoInfer<Row>): Record<string, string>;
  /** The record's fields for field selection (projection.ts). */
  readonly fields: Fields;
  /** The list orders by orderBy name; the first is the default. */
  readonly orders: Readonly<Record<string, ListOrder>>;
  /** How a filter narrows the website's rows: no conditions when the list is every record of the website. */
  conditions(eb: ExpressionBuilder<Database, T>, dialect: DialectName, siteId: number, filter: Partial<F>): Expression<SqlBool>[];
  /** Each order in its default direction and reversed, with cursors of its own. */
  readonly sorted: Readonly<Record<string, { readonly forward: SortOrder; readonly reversed: SortOrder }>>;
}

/**
 * A resource's description, with each order's cursors made under `cursorTag`: the default order
 * in its default direction keeps the bare tag (`p`, so cursors given out before orders could be
 * chosen still work), every other one adds its name and `~` when reversed (`p.title`, `p.title~`).
 * A cursor then names the order it belongs to: the values of its columns of the last record shown.
 */
export function storedResource<T extends StoredTable, Row, R, F>(
  spec: Omit<StoredResource<T, Row, R, F>, 'sorted'> & { readonly cursorTag: string },
): StoredResource<T, Row, R, F> {
  const { cursorTag, ...resource } = spec;
  const names = Object.keys(resource.orders);
  const sorted = Object.fromEntries(
    Object.entries(resource.orders).map(([name, order]) => {
      const tag = name === names[0] ? cursorTag : `${cursorTag}.${name}`;
      const parts = order.columns.map((c) => c.type);
      const reversedColumns = order.columns.map((c) => ({ ...c, desc: !c.desc }));
      return [
        name,
        {
          forward: { columns: order.columns, index: order.index, cursor: keysetCursor(tag, parts) },
          reversed: { columns: reversedColumns, index: order.index, cursor: keysetCursor(`${tag}~`, parts) },
        },
      ];
    }),
  );
  return { ...resource, sorted };
}

/** The order a list asked for (its default when absent), in the direction asked for. */
export function sortOrder(r: AnyResource, orderBy?: string, direction?: OrderDirection): SortOrder {
  const name = orderBy ?? Object.keys(r.orders)[0]!;
  const order = r.sorted[name];
  // The route's schema admits only the resource's orders: a name outside them is a bug, not input.
  if (!order) throw new Error(`${r.noun} lists have no order ${name}`);
  const defaultDesc = order.forward.columns[0]!.desc === true;
  const reversed = direction === 'reverse' || (direction === 'asc' && defaultDesc) || (direction === 'desc' && !defaultDesc);
  return reversed ? order.reversed : order.forward;
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
export async function findRow<Row>(
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

/**
 * Writes the stored record and the sort keys that the row's columns give (after every write, in
 * its transaction), so no write path can leave a record listed at a stale place.
 */
async function writeStored(
  db: DbHandle,
  r: AnyResource,
  siteId: number,
  id: number,
  stored: StoredRecord & Record<string, string>,
): Promise<void> {
  await db
    .updateTable(r.table)
    .set(stored as never)
    .where('site_id', '=', siteId)
    .where(sql.ref(r.id), '=', id)
    .execute();
}

async function deleteRow(db: DbHandle, r: AnyResource, siteId: number, id: number): Promise<void> {
  await db.deleteFrom(r.table).where('site_id', '=', siteId).where(sql.ref(r.id), '=', id).execute();
}

function filtered<F>(db: DbHandle, r: AnyResource<unknown, unknown, F>, siteId: number, filter: Partial<F>) {
  const dialect = dialectOf(db);
  return db
    .selectFrom(r.table)
    .where(column(r, 'site_id'), '=', siteId)
    .where((eb) => eb.and(r.conditions(eb, dialect, siteId, filter)));
}

function inOrder<Q extends ReturnType<typeof filtered>>(r: AnyResource, order: SortOrder, query: Q): Q {
  let ordered = query;
  for (const c of order.columns) {
    ordered = (c.desc ? ordered.orderBy(column(r, c.column), 'desc') : ordered.orderBy(column(r, c.column))) as Q;
  }
  return ordered;
}

/** The list's rows: id, stored text and tag, in list order. */
function inListOrder<F>(db: DbHandle, r: AnyResource<unknown, unknown, F>, siteId: number, filter: Partial<F>, order: SortOrder) {
  return inOrder(r, order, filtered(db, r, siteId, filter))
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
  order: SortOrder = sortOrder(r),
): Promise<{ rows: StoredItem[]; total: number }> {
  const everyRecord = r.conditions(expressionBuilder<Database, StoredTable>(), dialectOf(db), siteId, filter).length === 0;
  const [rows, total] = await Promise.all([
    windowRows(db, r, siteId, filter, offset, limit, order).execute(),
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
  order: SortOrder,
) {
  if (dialectOf(db) === 'sqlite') return inListOrder(db, r, siteId, filter, order).offset(offset).limit(limit);
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
 * until the page is full.
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
async function storeRecord<R>(
  db: DbHandle,
  r: AnyResource<unknown, R>,
  siteId: number,
  id: number,
): Promise<{ record: R; etag: string; recordJson: string }> {
  const row = await findRow(db, r, siteId, id);
  if (!row) throw new Error(`${r.noun} ${id} vanished inside its own write`);
  const record = r.toRecord(row);
  const stored = storedRecord(record as object);
  await writeStored(db, r, siteId, id, { ...stored, ...r.sortKeys(row) });
  return { record, etag: stored.etag, recordJson: stored.record_json };
}

/**
 * The last step of every write of a record: its stored record (storeRecord), and the change in the
 * change log, with the record as the API returns it.
 */
export async function storeChanged<R>(
  db: DbHandle,
  r: AnyResource<unknown, R>,
  siteId: number,
  id: number,
  op: Exclude<ChangeOp, 'delete'>,
  actor: ActorRef,
): Promise<{ record: R; etag: string }> {
  const { record, etag, recordJson } = await storeRecord(db, r, siteId, id);
  await recordChange(db, { siteId, type: r.noun, id, op, actor, recordJson });
  return { record, etag };
}

/**
 * A revision restored as the record's current content, under its id, in one transaction: the
 * image lock (the sweep must not remove a file the revision shows), the current row locked and
 * held to the precondition, then `write` puts the revision's columns in place (an update, or an
 * insert when the record is deleted) and the change is logged with op `restore`. `created` says
 * which it was: a deleted record comes back as a 201.
 */
export async function restoreChanged<Row, R>(
  db: DbHandle,
  r: AnyResource<Row, R>,
  siteId: number,
  id: number,
  actor: ActorRef,
  precondition: Precondition | undefined,
  write: (tx: DbHandle, current: (Row & { etag: string }) | undefined) => Promise<void>,
): Promise<{ record: R; etag: string; created: boolean }> {
  return inTransaction(db, async (tx) => {
    await lockImageReferences(tx, 'shared');
    const current = await findRow(tx, r, siteId, id, true);
    precondition?.(current?.etag);
    await write(tx, current);
    return { ...(await storeChanged(tx, r, siteId, id, 'restore', actor)), created: !current };
  });
}

/** Deletes a record found for the write (findForWrite) and logs the change, with the record as it was. */
export async function deleteChanged<Row>(
  db: DbHandle,
  r: AnyResource<Row>,
  siteId: number,
  id: number,
  row: Row,
  actor: ActorRef,
): Promise<void> {
  await deleteRow(db, r, siteId, id);
  const { record_json } = storedRecord(r.toRecord(row) as object);
  await recordChange(db, { siteId, type: r.noun, id, op: 'delete', actor, recordJson: record_json });
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
