import { type TSchema, Type } from 'typebox';
import type { FieldSpec } from './fields.js';

const INT32 = { minimum: -2147483648, maximum: 2147483647 };

/** A record as returned: every field of the catalogue, plus `id`. */
export function recordSchema(name: string, fields: Record<string, FieldSpec>, extra: Record<string, TSchema> = {}) {
  const properties: Record<string, TSchema> = {};
  for (const [field, spec] of Object.entries(fields)) {
    const description = spec.description;
    if (spec.kind === 'serial' || spec.kind === 'int') properties[field] = Type.Integer({ description });
    else if (spec.kind === 'bool') properties[field] = Type.Boolean({ description });
    else properties[field] = Type.String({ description });
  }
  return Type.Object({ ...properties, ...extra }, { $id: name, additionalProperties: false });
}

/** Booleans in bodies: true/false or 1/0 (spec: "accepts true or 1"). */
export const BodyBoolean = Type.Union([Type.Boolean(), Type.Integer({ minimum: 0, maximum: 1 })]);

/**
 * A POST body: `id` selects the record to update; every field is optional; unknown fields are
 * refused. System fields are accepted so a GET → edit → POST round trip works (they are ignored).
 */
export function writeSchema(
  fields: Record<string, FieldSpec>,
  overrides: Record<string, TSchema> = {},
  extra: Record<string, TSchema> = {},
) {
  const properties: Record<string, TSchema> = {
    id: Type.Optional(Type.Integer({ minimum: 1, maximum: INT32.maximum, description: 'ID of the record to update; absent to insert' })),
  };
  for (const [field, spec] of Object.entries(fields)) {
    const description = spec.description;
    let schema: TSchema;
    if (overrides[field]) schema = overrides[field];
    else if (spec.kind === 'serial' || spec.kind === 'int') schema = Type.Integer({ ...INT32, description });
    else if (spec.kind === 'bool') schema = Type.Union([Type.Boolean(), Type.Integer({ minimum: 0, maximum: 1 })], { description });
    else schema = Type.String({ description });
    properties[field] = Type.Optional(schema);
  }
  for (const [field, schema] of Object.entries(extra)) properties[field] = Type.Optional(schema);
  return Type.Object(properties, { additionalProperties: false });
}

export function envelopeSchema(record: TSchema) {
  return Type.Object(
    {
      data: Type.Array(record),
      meta: Type.Object({
        total: Type.Integer({ description: 'Records matching the filters, before offset and pageSize' }),
        offset: Type.Integer(),
        pageSize: Type.Integer(),
      }),
    },
    { additionalProperties: false },
  );
}

export function writtenSchema(record: TSchema) {
  return Type.Object({ data: Type.Array(record) }, { additionalProperties: false });
}

export const IdParams = Type.Object(
  { id: Type.Integer({ minimum: 1, maximum: INT32.maximum, description: 'Record ID' }) },
  { additionalProperties: false },
);

/** Query booleans: true/1 and false/0. */
export const QueryBoolean = Type.Union([Type.Literal('true'), Type.Literal('1'), Type.Literal('false'), Type.Literal('0')]);

export const MATCH_TYPES = ['like', 'exact', 'contains', 'startsWith', 'endsWith'] as const;
export type MatchType = (typeof MATCH_TYPES)[number];

/** Query parameters every list shares. */
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
  keywords: Type.Optional(Type.String({ description: 'Full-text search; every word must match' })),
  publicContentOnly: Type.Optional({ ...QueryBoolean, description: 'Only public content; accepts true or 1' }),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: INT32.maximum, description: 'Number of matching records to skip' })),
  pageSize: Type.Optional(
    Type.Union([Type.Integer(), Type.String()], {
      description: 'Maximum records returned, 1 to 999; absent or any other value means 200',
    }),
  ),
};

export const DEFAULT_PAGE_SIZE = 200;

/** Spec §8: 1–999 is taken as is; absent or anything else (0, 1000, -5, "abc") means 200. */
export function pageSizeOf(raw: number | string | undefined): number {
  const n = typeof raw === 'number' ? raw : raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  return Number.isInteger(n) && n >= 1 && n <= 999 ? n : DEFAULT_PAGE_SIZE;
}

export function queryBoolean(raw: string | undefined): boolean {
  return raw === 'true' || raw === '1';
}
