/**
 * Field selection of lists (`fields`, `allFields=false`). Lists send each record's stored JSON
 * text as it is; only a list that asks for fewer fields has its records parsed and written again
 * with those fields, so the default list stays as fast as it was.
 */
import { ValidationError } from '../../errors.js';
import { type StoredItem, textOf } from './stored.js';

/** What a resource tells field selection: its record's fields, its id fields and its HTML body fields. */
export interface Fields {
  readonly names: readonly string[];
  /** Always sent, whatever was chosen: a record without its id could not be fetched or updated. */
  readonly ids: readonly string[];
  /** Left out by `allFields=false`. */
  readonly bodies: readonly string[];
}

/** Longest `fields` value: every field name of the largest record, with room to spare. */
export const FIELDS_MAX = 2000;

/**
 * The fields a list shows: undefined for every field (the default), or those chosen. `fields`
 * decides when sent (its names and the ids); otherwise `allFields=false` (or 0) leaves out the
 * HTML bodies. An unknown or empty name is a 400 naming `fields` that lists the allowed names.
 */
export function chosenFields(
  f: Fields,
  query: { fields?: string | undefined; allFields?: string | undefined },
): readonly string[] | undefined {
  if (query.fields !== undefined) {
    const asked = query.fields.split(',').map((name) => name.trim());
    const unknown = asked.filter((name) => !f.names.includes(name));
    if (unknown.length > 0) {
      const named = unknown.map((name) => (name === '' ? '(an empty name)' : name)).join(', ');
      throw new ValidationError([{ field: 'fields', message: `has unknown field names: ${named}; allowed: ${f.names.join(', ')}` }]);
    }
    return f.names.filter((name) => f.ids.includes(name) || asked.includes(name));
  }
  if (query.allFields === 'false' || query.allFields === '0') return f.names.filter((name) => !f.bodies.includes(name));
  return undefined;
}

/** The items with only `fields` in their text, in the record's own order of fields. */
export function projected(items: readonly StoredItem[], fields: readonly string[]): StoredItem[] {
  const kept = new Set(fields);
  return items.map((item) => {
    const record = JSON.parse(textOf(item.record_json)) as Record<string, unknown>;
    const shown: Record<string, unknown> = {};
    for (const key of Object.keys(record)) if (kept.has(key)) shown[key] = record[key];
    return { id: item.id, etag: item.etag, record_json: JSON.stringify(shown) };
  });
}
