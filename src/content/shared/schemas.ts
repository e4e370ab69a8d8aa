import {
  type TBoolean,
  type TInteger,
  type TObject,
  type TOptional,
  type TProperties,
  type TSchema,
  type TString,
  type TUnion,
  Type,
} from 'typebox';
import { ValidationError } from '../../errors.js';
import { CURSOR_MAX } from './cursor.js';
import type { FieldKind, FieldSpec } from './fields.js';
import { FIELDS_MAX } from './projection.js';

/** The range of the integer columns (PostgreSQL refuses a query with a value outside it). */
const INT32 = { minimum: -2147483648, maximum: 2147483647 };
export const INT32_MAX = INT32.maximum;
/** The largest page of a list (spec §8). */
export const MAX_PAGE_SIZE = 999;

type Catalogue = Record<string, FieldSpec>;

/** The JSON type of each field kind as a record returns it. */
type RecordKind<K extends FieldKind> = K extends 'serial' | 'int' ? TInteger : K extends 'bool' ? TBoolean : TString;
/** …and as a POST body may send it (booleans also as 1/0). */
type WriteKind<K extends FieldKind> = K extends 'serial' | 'int' ? TInteger : K extends 'bool' ? TUnion<[TBoolean, TInteger]> : TString;

type RecordProperties<F extends Catalogue, E extends TProperties> = Omit<{ [K in keyof F]: RecordKind<F[K]['kind']> }, keyof E> & E;
type WriteProperties<F extends Catalogue, O extends TProperties, X extends TProperties> = { id: TOptional<TInteger> } & {
  [K in keyof F]: TOptional<K extends keyof O ? O[K] : WriteKind<F[K]['kind']>>;
} & { [K in keyof X]: TOptional<X[K]> };

/** A record as returned: every field of the catalogue in its JSON type, `extra` replacing or adding some. */
export function recordSchema<F extends Catalogue, E extends TProperties>(
  name: string,
  fields: F,
  extra: E,
): TObject<RecordProperties<F, E>> {
  const properties: TProperties = {};
  for (const [field, spec] of Object.entries(fields)) {
    const description = spec.description;
    if (spec.kind === 'serial' || spec.kind === 'int') properties[field] = Type.Integer({ description });
    else if (spec.kind === 'bool') properties[field] = Type.Boolean({ description });
    else properties[field] = Type.String({ description });
  }
  return Type.Object({ ...properties, ...extra }, { $id: name, additionalProperties: false }) as TObject<RecordProperties<F, E>>;
}

/** Booleans in bodies: true/false or 1/0 (spec: "accepts true or 1"). */
export const BodyBoolean = Type.Union([Type.Boolean(), Type.Integer({ minimum: 0, maximum: 1 })]);

/**
 * A POST body: `id` selects the record to update; every field is optional; unknown fields are
 * refused. System fields are accepted so a GET → edit → POST round trip works (they are ignored).
 * `overrides` narrows a field's schema; `extra` adds fields that are not stored (migrateMode).
 * `name` is the schema's name in the OpenAPI document.
 */
export function writeSchema<
  F extends Catalogue,
  O extends TProperties = Record<never, TSchema>,
  X extends TProperties = Record<never, TSchema>,
>(name: string, fields: F, overrides: O = {} as O, extra: X = {} as X): TObject<WriteProperties<F, O, X>> {
  const properties: TProperties = {
    id: Type.Optional(Type.Integer({ minimum: 1, maximum: INT32.maximum, description: 'ID of the record to update; absent to insert' })),
  };
  for (const [field, spec] of Object.entries(fields)) {
    const description = spec.description;
    const override = overrides[field];
    if (override) properties[field] = Type.Optional(override);
    else if (spec.kind === 'serial' || spec.kind === 'int') properties[field] = Type.Optional(Type.Integer({ ...INT32, description }));
    else if (spec.kind === 'bool') properties[field] = Type.Optional({ ...BodyBoolean, description });
    else properties[field] = Type.Optional(Type.String({ description }));
  }
  for (const [field, schema] of Object.entries(extra)) properties[field] = Type.Optional(schema);
  return Type.Object(properties, { $id: name, additionalProperties: false }) as TObject<WriteProperties<F, O, X>>;
}

/**
 * A record as a list sends it: `fields` or `allFields=false` may leave out any field but the ids,
 * so the others are optional here; a list without them sends every field.
 */
export function listedRecordSchema(name: string, record: TObject, ids: readonly string[]): TObject {
  const properties: TProperties = {};
  for (const [field, schema] of Object.entries(record.properties)) properties[field] = ids.includes(field) ? schema : Type.Optional(schema);
  return Type.Object(properties, { $id: name, additionalProperties: false });
}

/** A list's meta: offset paging answers total, offset and pageSize; cursor paging pageSize and nextCursor. */
const ListMeta = Type.Object(
  {
    total: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: INT32.maximum,
        description: 'Records matching the filters, before offset and pageSize (not in cursor mode)',
      }),
    ),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: INT32.maximum, description: 'The offset asked for (not in cursor mode)' })),
    pageSize: Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE }),
    nextCursor: Type.Optional(
      Type.Union([Type.String({ maxLength: CURSOR_MAX }), Type.Null()], {
        description: 'Cursor mode only: send it as `cursor` for the next page; null on the last page',
      }),
    ),
  },
  { $id: 'ListMeta' },
);

/** The list envelope of `record`, named `name` in the OpenAPI document. */
export function envelopeSchema(name: string, record: TSchema) {
  return Type.Object(
    {
      data: Type.Array(record, { maxItems: MAX_PAGE_SIZE }),
      meta: ListMeta,
    },
    { $id: name, additionalProperties: false },
  );
}

/** `{"data": [record]}`: what a write or a revision answers, named `name` in the OpenAPI document. */
export function writtenSchema(name: string, record: TSchema) {
  return Type.Object({ data: Type.Array(record, { minItems: 1, maxItems: 1 }) }, { $id: name, additionalProperties: false });
}

export const IdParams = Type.Object(
  { id: Type.Integer({ minimum: 1, maximum: INT32.maximum, description: 'Record ID' }) },
  { additionalProperties: false },
);

/** Query booleans: true/1 and false/0. */
export const QueryBoolean = Type.Union([Type.Literal('true'), Type.Literal('1'), Type.Literal('false'), Type.Literal('0')]);

const MATCH_TYPES = ['like', 'exact', 'contains', 'startsWith', 'endsWith'] as const;
export type MatchType = (typeof MATCH_TYPES)[number];

/** Query parameters every list shares. */
/**
 * Longest text filter, in characters: far beyond any title or filename, and far below SQLite's
 * 50,000-byte limit on a LIKE pattern, beyond which the query fails (a 500, found by the fuzz suite).
 */
export const FILTER_TEXT_MAX = 1000;

const NO_NUL = '^[^\\u0000]*$';

/**
 * A text filter of a list's query string. It holds no NUL character: no stored text can have one
 * on PostgreSQL, and SQLite's pattern matching ends a pattern there (`tags=%00` matched every
 * page), so both answer the same 400.
 */
export function filterText(description: string) {
  return Type.String({ maxLength: FILTER_TEXT_MAX, pattern: NO_NUL, description });
}

export const listQueryProperties = {
  id: Type.Optional(Type.Integer({ minimum: 1, maximum: INT32.maximum, description: 'Filter by id' })),
  matchType: Type.Optional(
    Type.Union(
      MATCH_TYPES.map((m) => Type.Literal(m)),
      {
        description:
          'How text filters compare: like (default; % and _ are wildcards, \\ escapes them, no wildcard matches the whole value), exact, contains, startsWith, endsWith. Always case-insensitive.',
      },
    ),
  ),
  keywords: Type.Optional(filterText('Full-text search; every word must match')),
  publicContentOnly: Type.Optional({ ...QueryBoolean, description: 'Only public content; accepts true or 1' }),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: INT32.maximum, description: 'Number of matching records to skip' })),
  cursor: Type.Optional(
    Type.String({
      maxLength: CURSOR_MAX,
      description:
        'Cursor (keyset) paging: empty for the first page, then the meta.nextCursor of the previous answer. Its meta is {pageSize, nextCursor} (null on the last page), with no total or offset; every page costs the same however deep. Not together with offset.',
    }),
  ),
  pageSize: Type.Optional(
    Type.Union([Type.Integer(), Type.String()], {
      description: 'Maximum records returned, 1 to 999; absent or any other value means 200',
    }),
  ),
};

const ORDER_DIRECTIONS = ['asc', 'desc', 'reverse'] as const;

/**
 * The parameters that choose a list's order and fields. `orders` are the resource's orderBy names
 * (its description in stored-resource.ts), the first the default; `bodies` its HTML body fields.
 */
export function listViewProperties(orders: readonly string[], bodies: readonly string[]) {
  const orderNames = (description: string) =>
    Type.Optional(
      Type.Union(
        orders.map((o) => Type.Literal(o)),
        { description },
      ),
    );
  return {
    orderBy: orderNames(`The list's order: ${orders.join(', ')} (default ${orders[0]}). Ties go by id.`),
    orderby: orderNames('The same as orderBy, as the hosted original’s examples spell it'),
    orderDirection: Type.Optional(
      Type.Union(
        ORDER_DIRECTIONS.map((d) => Type.Literal(d)),
        {
          description:
            'asc or desc: the direction of the first column of the order; reverse: the opposite of the default direction of the order. Ties go by id in the same direction.',
        },
      ),
    ),
    allFields: Type.Optional({
      ...QueryBoolean,
      description: `true or 1 (default): every field. false or 0: every field but the HTML bodies (${bodies.join(', ')}).`,
    }),
    fields: Type.Optional(
      Type.String({
        maxLength: FIELDS_MAX,
        description: 'Comma-separated field names: only those fields (and the id fields) are sent. Takes precedence over allFields.',
      }),
    ),
  };
}

export const DEFAULT_PAGE_SIZE = 200;

/** Spec §8: 1–999 is taken as is; absent or anything else (0, 1000, -5, "abc") means 200. */
export function pageSizeOf(raw: number | string | undefined): number {
  const n = typeof raw === 'number' ? raw : raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  return Number.isInteger(n) && n >= 1 && n <= MAX_PAGE_SIZE ? n : DEFAULT_PAGE_SIZE;
}

export function queryBoolean(raw: string | undefined): boolean {
  return raw === 'true' || raw === '1';
}

/** Where a list query starts: `offset` records in, or (cursor mode) after the key a cursor names. */
export type ListWindow = { offset: number; pageSize: number } | { cursor: string; pageSize: number };

/** The window of a list query: where it starts and how many records it holds. */
export function listWindow(query: { offset?: number; pageSize?: number | string; cursor?: string }): ListWindow {
  const pageSize = pageSizeOf(query.pageSize);
  if (query.cursor === undefined) return { offset: query.offset ?? 0, pageSize };
  if (query.offset !== undefined) {
    throw new ValidationError([
      { field: 'cursor', message: 'cannot be combined with offset' },
      { field: 'offset', message: 'cannot be combined with cursor' },
    ]);
  }
  return { cursor: query.cursor, pageSize };
}

/** The form fields that carry the API credentials where the hosted platform's clients send them. */
const FORM_CREDENTIALS = {
  apiID: Type.Optional(Type.String({ description: 'The API ID, when it is not sent in a header' })),
  apiKey: Type.Optional(Type.String({ description: 'The API key, when it is not sent in a header' })),
};

/**
 * A write route's bodies, for its validation and the references: the record as JSON (also
 * `text/json`), or as the `data` field of a urlencoded or multipart form with the credentials
 * beside it; `files`, the multipart form's file fields.
 */
export function writeBodies<S extends TSchema>(record: S, noun: string, files: TProperties = {}) {
  const data = Type.String({ description: `The ${noun} JSON object as text: the same fields and rules as the JSON body` });
  return {
    content: {
      'application/json': { schema: record },
      'text/json': { schema: record },
      'application/x-www-form-urlencoded': {
        schema: Type.Object({ data, ...FORM_CREDENTIALS }, { description: 'application/x-www-form-urlencoded' }),
      },
      'multipart/form-data': { schema: Type.Object({ data, ...FORM_CREDENTIALS, ...files }, { description: 'multipart/form-data' }) },
    },
  };
}

/**
 * The id a PATCH updates: the path's. An `id` in the body may repeat it; naming another record is
 * a 400 rather than a write to either.
 */
export function samePathId(pathId: number, bodyId: number | undefined, noun: string): number {
  if (bodyId !== undefined && bodyId !== pathId) {
    throw new ValidationError([{ field: 'id', message: `names ${noun} ${bodyId}, but the path names ${noun} ${pathId}: send one` }]);
  }
  return pathId;
}
