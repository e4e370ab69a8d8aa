/**
 * Generators of hostile input for the fuzz suite (test/fuzz.test.ts): strings, query strings,
 * JSON bodies derived from a route's own TypeBox schema and then damaged, raw garbage bodies.
 * Multipart forms are in fuzz.multipart.ts. Everything a generator makes is what an HTTP client
 * could send: URLs are ASCII (Node's parser refuses raw non-ASCII before any route sees it).
 */
import fc from 'fast-check';
import type { TSchema } from 'typebox';
import { BLOGS } from '../src/content/blogs/blog.repository.js';
import { PAGES } from '../src/content/pages/page.repository.js';

const FIELD_NAMES = [...new Set([...PAGES.fields.names, ...BLOGS.fields.names])];

/** Strings that have broken parsers, filters and SQL before. */
const NOTORIOUS = [
  '',
  ' ',
  '%',
  '_',
  '\\',
  '%%',
  '\\%',
  "'",
  '"',
  "' OR 1=1 --",
  '\u0000',
  'NaN',
  'Infinity',
  '-0',
  '-1',
  '0',
  '1.5',
  '1e309',
  '0x10',
  '9007199254740993',
  '2147483648',
  '-2147483649',
  'true',
  'null',
  'undefined',
  '[]',
  '{}',
  '__proto__',
  'constructor',
  'hasOwnProperty',
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '\u202e\u0301',
  '\ufeff',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀',
  'Crème Brûlée',
  '\ud800',
  '\r\n',
];

/** A hostile string of moderate size: ASCII, any Unicode (lone surrogates too), numbers, notorious values. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(...NOTORIOUS),
  fc.integer().map(String),
  fc.double().map(String),
  fc.bigInt().map(String),
);

/** Now and then a long one (up to 12 kB, which a URL or header can still carry). */
export const hostileValue: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: hostileString, weight: 12 },
  {
    arbitrary: fc.tuple(hostileString, fc.integer({ min: 100, max: 3000 })).map(([s, n]) => (s || 'x').repeat(n).slice(0, 12_000)),
    weight: 1,
  },
);

/** Percent-encodes all but unreserved characters; a lone surrogate becomes its (invalid) UTF-8 bytes. */
export function encode(value: string): string {
  return Array.from(value, (c) => (/^\p{Surrogate}$/u.test(c) ? '%ED%A0%80' : encodeURIComponent(c))).join('');
}

/** How a query value goes into the URL: encoded, raw where ASCII allows, or broken on purpose. */
const encoded = (value: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof(
    { arbitrary: value.map(encode), weight: 6 },
    { arbitrary: value.map((v) => encode(v).replace(/%20/g, '+')), weight: 1 },
    { arbitrary: value.map((v) => encode(encode(v))), weight: 1 },
    { arbitrary: fc.constantFrom('%', '%z', '%zz', '%E2%82', '%C0%AF', '%00', '%u0041', '%%41', '%2', '%ff%fe', '%F0%9F%98'), weight: 2 },
    { arbitrary: fc.string({ unit: fc.constantFrom(..."abcXYZ019-._~!$'()*,;:@/?[]".split('')), maxLength: 12 }), weight: 2 },
  );

/**
 * A query string (with its `?`, or empty) for a route's querystring schema: its own parameters
 * with values it accepts or hostile ones, unknown names, repeated names, names without a value.
 * Queries are valid often enough that the filters behind them run too.
 */
export function queryString(schema: TSchema): fc.Arbitrary<string> {
  const properties = (schema as { properties: Record<string, TSchema> }).properties;
  const known = Object.keys(properties);
  const unknown = fc.oneof(
    { arbitrary: fc.constantFrom('__proto__', 'constructor', 'toString', 'a[b]', 'id[]', 'page[0]', '', 'PAGE', 'pagesize'), weight: 2 },
    { arbitrary: hostileString, weight: 1 },
  );
  const knownPair = (name: string) =>
    fc
      .oneof(
        { arbitrary: (LIST_VALUES[name] ?? validValue(properties[name]!)).map((v) => encode(String(v))), weight: 3 },
        { arbitrary: encoded(hostileValue), weight: 2 },
      )
      .map((v) => `${encode(name)}=${v}`);
  const odd = fc.oneof(
    { arbitrary: fc.tuple(unknown.map(encode), encoded(hostileValue)).map(([n, v]) => `${n}=${v}`), weight: 3 },
    { arbitrary: fc.oneof(unknown, fc.constantFrom(...known, 'x')).map(encode), weight: 1 }, // a name without `=`
    { arbitrary: fc.constantFrom('=', '&', '==', '=x', 'a==b', ';', '#'), weight: 1 },
  );
  const pair =
    known.length > 0 ? fc.oneof({ arbitrary: fc.constantFrom(...known).chain(knownPair), weight: 6 }, { arbitrary: odd, weight: 1 }) : odd;
  return fc.oneof(
    // A route without query parameters refuses any: most of its cases send none, so that the body is what gets tested.
    { arbitrary: fc.constant(''), weight: known.length > 0 ? 3 : 12 },
    { arbitrary: fc.array(pair, { minLength: 1, maxLength: 6 }).map((pairs) => `?${pairs.join('&').replace(/#/g, '%23')}`), weight: 7 },
  );
}

/** A key value of a list cursor: in range, just out of it, of the wrong type, or hostile text. */
const cursorKeyValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.integer({ min: -2147483648, max: 2147483647 }), weight: 4 },
  { arbitrary: fc.constantFrom(2147483648, -2147483649, 1.5, -0, 2 ** 60, null, true, [], {}), weight: 1 },
  { arbitrary: fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)), weight: 2 },
  { arbitrary: hostileString, weight: 3 },
);

/** The tags of the lists' cursors, one per list, order and direction (stored-records.ts), and a few of nothing. */
const CURSOR_TAGS = [PAGES, BLOGS].flatMap((r) =>
  Object.values(r.sorted).flatMap((order) =>
    [order.forward, order.reversed].map((o) => JSON.parse(Buffer.from(o.cursor.encode([]), 'base64url').toString())[0] as string),
  ),
);

/**
 * A `cursor`: base64url of a JSON array as the lists write them (`["p", order, page]`,
 * `["b.title~", key, id]`), with keys of any kind, so that decoding is tested and well-formed
 * cursors reach the keyset queries of every order; or any string.
 */
const cursorValue: fc.Arbitrary<string> = fc.oneof(
  {
    arbitrary: fc
      .tuple(fc.constantFrom(...CURSOR_TAGS, 'x', '', 'p.nope'), fc.array(cursorKeyValue, { minLength: 1, maxLength: 3 }))
      .map(([tag, key]) => Buffer.from(JSON.stringify([tag, ...key])).toString('base64url')),
    weight: 4,
  },
  { arbitrary: fc.constant(''), weight: 1 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 60 }), weight: 1 },
);

/**
 * A `since` of the change feed: base64url of `["c", seq]` as the feed writes it, with seqs of any
 * kind, a list's cursor, or any string; `since=` reads from the start.
 */
const sinceValue: fc.Arbitrary<string> = fc.oneof(
  {
    arbitrary: fc
      .tuple(fc.constantFrom('c', 'c', 'c', ...CURSOR_TAGS, 'x', ''), fc.array(cursorKeyValue, { minLength: 0, maxLength: 2 }))
      .map(([tag, key]) => Buffer.from(JSON.stringify([tag, ...key])).toString('base64url')),
    weight: 4,
  },
  { arbitrary: fc.nat({ max: 200 }).map((seq) => Buffer.from(JSON.stringify(['c', seq])).toString('base64url')), weight: 3 },
  { arbitrary: fc.constant(''), weight: 1 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 60 }), weight: 1 },
);

/** A `fields` value: names of a record's fields (of either resource, so some are unknown), comma-separated. */
const fieldsValue: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.array(fc.constantFrom(...FIELD_NAMES), { minLength: 1, maxLength: 6 }).map((names) => names.join(',')), weight: 4 },
  { arbitrary: fc.array(fc.oneof(fc.constantFrom(...FIELD_NAMES), hostileString), { maxLength: 4 }).map((n) => n.join(',')), weight: 1 },
);

/** List and feed parameters whose valid values a schema cannot say: sent from these instead. */
const LIST_VALUES: Record<string, fc.Arbitrary<unknown>> = { cursor: cursorValue, fields: fieldsValue, since: sinceValue };

/** A path segment for an `:id` or `:name`: a real value, a number of any size, or hostile text. */
export function pathSegment(real: readonly (string | number)[]): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: fc.constantFrom(...real).map(String), weight: 3 },
    { arbitrary: fc.integer({ min: -5, max: 50 }).map(String), weight: 2 },
    { arbitrary: fc.oneof(fc.integer(), fc.bigInt()).map(String), weight: 1 },
    { arbitrary: encoded(hostileValue).filter((s) => s !== '' && !s.includes('/') && !s.includes('?')), weight: 3 },
  );
}

/**
 * A JSON value, as JSON text, of the kinds a schema can refuse: wrong types, null, huge strings,
 * Unicode (lone surrogates escaped), deep nesting, numbers JSON.stringify would never write.
 */
export const hostileJson: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)), weight: 6 },
  { arbitrary: hostileString.map((s) => JSON.stringify(s)), weight: 6 },
  {
    arbitrary: fc.constantFrom('null', 'true', 'false', '0', '-0', '1.0', '5e0', '1e400', '-1e400', '"5"', '"\\ud800"', '[]', '{}'),
    weight: 4,
  },
  { arbitrary: fc.integer({ min: 1, max: 4000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`), weight: 1 },
  { arbitrary: fc.integer({ min: 1, max: 2000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`), weight: 1 },
  { arbitrary: fc.integer({ min: 1000, max: 300_000 }).map((n) => JSON.stringify('é'.repeat(n))), weight: 1 },
);

/** Keys that pollute prototypes when a parser or a merge is careless. */
const POLLUTING = ['__proto__', 'constructor', 'prototype'];

/** A value the schema accepts (roughly: patterns and formats are honoured; it is a start for mutation). */
export function validValue(schema: TSchema): fc.Arbitrary<unknown> {
  const s = schema as Record<string, unknown> & TSchema;
  if (Array.isArray(s.anyOf)) return fc.oneof(...(s.anyOf as TSchema[]).map(validValue));
  if ('const' in s) return fc.constant(s.const);
  switch (s.type) {
    case 'integer':
      return fc.integer({ min: (s.minimum as number) ?? -2147483648, max: (s.maximum as number) ?? 2147483647 });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(validValue(s.items as TSchema), { maxLength: 3 });
    case 'object':
      return fc.constant({});
    case 'string':
      if (s.format === 'email') return fc.emailAddress();
      if (s.format === 'date')
        return fc
          .date({ min: new Date('1900-01-01'), max: new Date('2200-12-31'), noInvalidDate: true })
          .map((d) => d.toISOString().slice(0, 10));
      if (typeof s.pattern === 'string')
        return fc.stringMatching(new RegExp(s.pattern as string), { size: 'small' }).map((v) => v.slice(0, 200));
      return fc.string({ unit: 'grapheme', maxLength: 60 });
    default:
      return fc.anything();
  }
}

/** How many things to damage: none in a good share of cases, so that valid requests get through too. */
export const damageCount = fc.oneof({ arbitrary: fc.constant(0), weight: 2 }, { arbitrary: fc.integer({ min: 1, max: 3 }), weight: 3 });

/**
 * A JSON object, as text: a valid-ish one, then damaged: fields given hostile values, unknown and
 * prototype-polluting keys added, keys repeated. Written as text so that `__proto__` and repeated
 * keys reach the server as sent.
 */
export function damagedObject(valid: fc.Arbitrary<Record<string, unknown>>, fields: readonly string[]): fc.Arbitrary<string> {
  const mutation: fc.Arbitrary<[string, string]> = fc.oneof(
    { arbitrary: fc.tuple(fc.constantFrom(...fields), hostileJson), weight: 6 },
    { arbitrary: fc.tuple(fc.constantFrom(...POLLUTING), fc.constantFrom('{"polluted":true}', '{}', 'null', '"x"')), weight: 1 },
    { arbitrary: fc.tuple(hostileString, hostileJson), weight: 1 },
  );
  const mutations = damageCount.chain((n) => fc.array(mutation, { minLength: n, maxLength: n }));
  return fc.tuple(valid, mutations, fc.boolean()).map(([record, mutations, appendMutations]) => {
    const entries = Object.entries(record).map(([k, v]): [string, string] => [k, JSON.stringify(v)]);
    for (const [k, v] of mutations) {
      const at = entries.findIndex(([name]) => name === k);
      // Either replace the field, or send it a second time (JSON.parse keeps the last).
      if (at >= 0 && !appendMutations) entries[at] = [k, v];
      else entries.push([k, v]);
    }
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
  });
}

export interface BodyOptions {
  /** Generators for some fields instead of the schema's (ids that exist). */
  overrides?: Record<string, fc.Arbitrary<unknown>>;
  /** Fields the valid record always has (a blog's page). */
  required?: readonly string[];
  /** Makes the valid record consistent where the schema cannot say so (page equal to id). */
  adjust?: (record: Record<string, unknown>) => Record<string, unknown>;
}

/** A JSON body for a write schema: any subset of its fields with values it accepts, then damaged. */
export function schemaBody(schema: TSchema, { overrides = {}, required = [], adjust = (r) => r }: BodyOptions = {}): fc.Arbitrary<string> {
  const properties = (schema as { properties: Record<string, TSchema> }).properties;
  const fields = Object.keys(properties);
  const valid = fc.record(Object.fromEntries(fields.map((f) => [f, overrides[f] ?? validValue(properties[f]!)])), {
    requiredKeys: [...required],
  });
  return damagedObject(valid.map(adjust), fields);
}

/** Raw bodies with every kind of content type: not JSON, cut JSON, JSON that is not an object, binary. */
export const garbageBody: fc.Arbitrary<{ contentType: string | undefined; payload: Buffer }> = fc.record({
  contentType: fc.oneof(
    fc.constantFrom(
      undefined,
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'application/json; charset=latin1',
      'APPLICATION/JSON',
      'application/json;;',
      'application/jsonx',
      'application/merge-patch+json',
      'text/plain',
      'text/html',
      'application/x-www-form-urlencoded',
      'application/x-www-form-urlencoded; charset=utf-8',
      'text/json',
      'text/json; charset=latin1',
      'TEXT/JSON',
      'multipart/form-data',
      'multipart/form-data; boundary=',
      'multipart/form-data; boundary="unclosed',
      'multipart/mixed; boundary=x',
      'application/xml',
      'image/png',
      '*/*',
      '',
      ';',
    ),
    hostileString.map((s) => s.replace(/[^\x20-\x7e]/g, '')),
  ),
  payload: fc.oneof(
    fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
    hostileJson.map((s) => Buffer.from(s)),
    fc.tuple(hostileJson, fc.nat()).map(([s, n]) => Buffer.from(s.slice(0, n % (s.length + 1)))),
    hostileString.map((s) => Buffer.from(s)),
    fc.constant(Buffer.alloc(0)),
    // The hosted original's forms: the record's JSON as `data`, credentials beside it, stray fields.
    fc
      .record({ data: hostileJson, apiID: hostileString, apiKey: hostileString, other: hostileString }, { requiredKeys: [] })
      .map((form) => Buffer.from(new URLSearchParams(form as Record<string, string>).toString())),
  ),
});
