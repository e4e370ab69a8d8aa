/**
 * The JSON Schemas of the MCP tools as an agent reads them. Every client puts the whole tools/list
 * answer into the model's context before its first call, so the schemas say what an agent needs to
 * build a call and nothing it cannot act on.
 */

export type Schema = Record<string, unknown> & { properties?: Record<string, Record<string, unknown>>; required?: string[] };

/**
 * A route schema as a plain JSON Schema: TypeBox's symbol keys go with the JSON round trip, and
 * $id is dropped, since a client compiles every tool's schema into one validator and the same
 * record schema (PageRecord) appears in several tools.
 */
export function plain(schema: unknown): Schema {
  return JSON.parse(JSON.stringify(schema), (key, value) => (key === '$id' ? undefined : value)) as Schema;
}

/** The route schemas' refusal of NUL in text (PostgreSQL cannot store it): no agent writes one. */
const NO_NUL = '^[^\\u0000]*$';
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `{"anyOf": [{"type": "string", "const": "a"}, …]}`, as TypeBox writes a union of literals. */
function stringLiterals(anyOf: unknown): string[] | undefined {
  if (!Array.isArray(anyOf) || anyOf.length === 0) return undefined;
  const values = anyOf.map((branch) =>
    isObject(branch) && branch.type === 'string' && typeof branch.const === 'string' && Object.keys(branch).length === 2
      ? branch.const
      : undefined,
  );
  return values.every((value) => value !== undefined) ? (values as string[]) : undefined;
}

/** A length from which a bound limits what a request may carry rather than saying what a value is. */
const LONG_TEXT = 1000;

/** A bound no value an agent means to send comes near: it keeps values storable, or requests small. */
const farBound = (key: string, value: unknown) =>
  (key === 'pattern' && value === NO_NUL) ||
  (key === 'minimum' && value === INT32_MIN) ||
  (key === 'maximum' && value === INT32_MAX) ||
  ((key === 'maxLength' || key === 'maxItems') && typeof value === 'number' && value >= LONG_TEXT);

/**
 * The schema an agent is shown: a union of string literals as one `enum`, and without the bounds
 * no meant value comes near (the int32 range of the columns, the no-NUL pattern, lengths of a
 * thousand and more). The arguments are still validated against the route's own schema, so those
 * bounds still hold: a value past them is a 400 naming the field.
 */
export function shown(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(shown);
  if (!isObject(schema)) return schema;
  const out: Record<string, unknown> = {};
  const literals = stringLiterals(schema.anyOf);
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'anyOf' && literals) Object.assign(out, { type: 'string', enum: literals });
    else if (key === 'properties' && isObject(value)) out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shown(v)]));
    else if (!farBound(key, value)) out[key] = shown(value);
  }
  return out;
}
