/**
 * How a resource with stored records (pages, blogs) describes itself to the shared code, once
 * (`storedResource`): its table, id column, catalogue columns, record builder, by-id read, sort
 * keys, list orders with their cursors, fields and filter conditions. The queries that use the
 * description are in stored-records.ts (by id), stored-lists.ts (lists) and stored-writes.ts
 * (a write's last steps); what only one resource has stays in its own folder.
 */
import type { AliasedRawBuilder, Compilable, Expression, ExpressionBuilder, SqlBool } from 'kysely';
import { sql } from 'kysely';
import { type DialectName, dialectOf } from '../../db/database.js';
import type { Database, DbHandle } from '../../db/schema.js';
import type { RecordType } from '../history/change-log.js';
import { type KeyPart, type KeysetCursor, keysetCursor } from './cursor.js';
import type { Fields } from './projection.js';
import type { StoredRecord, StoredText } from './stored.js';

/** The tables whose rows belong to a website and keep their record's JSON text and ETag. */
export type StoredTable = {
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
export type ListKey = readonly (number | string)[];

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
export interface SortOrder {
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
export type AnyResource<Row = unknown, R = unknown, F = unknown> = StoredResource<StoredTable, Row, R, F>;

export const column = (r: AnyResource, name: string) => sql.ref(`${r.table}.${name}`);

/**
 * The stored text, selected as `record_json`: on SQLite as its UTF-8 bytes when the row holds
 * anything outside ASCII (`record_non_ascii`, migration 0025), which then go out as they are
 * instead of being decoded into a string and encoded back; otherwise, and on PostgreSQL, as text
 * (an ASCII text is quickest as a string, and node-postgres would hex-decode bytes).
 */
export function storedText(db: DbHandle, table: StoredTable): AliasedRawBuilder<StoredText, 'record_json'> {
  const text = sql.ref(`${table}.record_json`);
  if (dialectOf(db) !== 'sqlite') return sql<StoredText>`${text}`.as('record_json');
  return sql<StoredText>`case when ${sql.ref(`${table}.record_non_ascii`)} = 1 then cast(${text} as blob) else ${text} end`.as(
    'record_json',
  );
}

export const selected = (db: DbHandle, names: readonly string[]) => names.map((name) => db.dynamic.ref(name)) as never[];
