import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { type FieldError, ValidationError } from '../errors.js';
import { compiledOnce } from './compiled-schemas.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const common: Options = {
  allErrors: true,
  // Unknown fields are errors that name the field, never silently dropped.
  removeAdditional: false,
  useDefaults: true,
  strict: false,
  // Schemas are compiled once for every app of the process (compiledOnce), and two of them may
  // carry the same `$id` with different limits from their app's configuration; no schema refers to
  // another by its id, so none is kept under it.
  addUsedSchema: false,
};

let compilers: { lenient: Ajv; strict: Ajv } | undefined;
const ajvs = () => {
  compilers ??= {
    lenient: addFormats(new Ajv({ ...common, coerceTypes: 'array' })),
    strict: addFormats(new Ajv({ ...common, coerceTypes: false })),
  };
  return compilers;
};
const bodyValidator = compiledOnce((schema) => ajvs().strict.compile(schema));
const textValidator = compiledOnce((schema) => withTextChecks(ajvs().lenient.compile(schema), schema as Schema));

/**
 * Two validators: query strings and path parameters arrive as text and are coerced to the declared
 * types; JSON bodies are taken as sent, so `"5"` is not an integer and `1` is not a string.
 */
export function installValidators(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart, contentType }) => {
    // A form body is read by its route, which validates what it reads (files are never buffered
    // to be validated here, and `data` is the record to validate); its schema documents the form.
    if (httpPart === 'body' && (contentType === 'multipart/form-data' || contentType === 'application/x-www-form-urlencoded')) {
      return () => true;
    }
    return httpPart === 'body' ? bodyValidator(schema) : textValidator(schema);
  });
}

/** A route's part, as the app's validator compiler is asked for it. */
interface RoutePart {
  readonly schema: object;
  readonly method: string;
  readonly url: string;
  readonly httpPart: 'body' | 'querystring' | 'params';
}

/**
 * Checks a value that arrives outside a request's own parts (a form's `data` field, an MCP tool's
 * arguments) by the app's own validator for `part`, so it is refused exactly as the route would
 * refuse it: the value on success (coerced and given its defaults in place, as a request's), else
 * a ValidationError whose fields are named under `context`.
 */
export function validatorFor<T>(app: FastifyInstance, part: RoutePart, context: string): (value: unknown) => T {
  const compile = app.validatorCompiler;
  if (!compile) throw new Error('installValidators must run before a validator is asked for');
  const validate = compile(part) as Validate;
  return (value) => {
    if (validate(value) === true) return value as T;
    throw new ValidationError(fieldErrors(validate.errors ?? [], context));
  };
}

interface Schema {
  readonly type?: string;
  readonly properties?: Record<string, Schema>;
  readonly anyOf?: readonly Schema[];
}

type Validate = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/**
 * What Ajv's coercion lets through in query strings and paths, checked on the text first: an
 * integer written any other way than digits (`0x3`, `3e0`, `+3`, ` 3`, `1.0` all coerce to a
 * number; `DELETE /api/page/1.0` deleted page 1), and a parameter given twice, which Ajv would
 * refuse with one type error per branch of its schema instead of saying what is wrong.
 */
function withTextChecks(validate: Validate, schema: Schema): Validate {
  const properties = Object.entries(schema.properties ?? {});
  const integers = properties.filter(([, p]) => p.type === 'integer').map(([name]) => name);
  const scalars = properties.filter(([, p]) => !allowsArray(p)).map(([name]) => name);
  if (scalars.length === 0) return validate;
  const checked: Validate = (data) => {
    const values = data as Record<string, unknown> | null;
    const errors: ErrorObject[] = [];
    for (const name of scalars) {
      if (Array.isArray(values?.[name])) errors.push(textError(name, 'is given more than once; send it once'));
    }
    for (const name of integers) {
      const value = values?.[name];
      if (typeof value === 'string' && !/^-?\d+$/.test(value)) errors.push(textError(name, 'must be a whole number, written in digits'));
    }
    if (errors.length > 0) {
      checked.errors = errors;
      return false;
    }
    const valid = validate(data);
    checked.errors = validate.errors;
    return valid;
  };
  return checked;
}

function allowsArray(schema: Schema): boolean {
  return schema.type === 'array' || (schema.anyOf ?? []).some(allowsArray);
}

function textError(name: string, message: string): ErrorObject {
  return { keyword: 'text', instancePath: `/${name}`, schemaPath: `#/properties/${name}`, params: {}, message };
}

/** Ajv errors → `{field, message}`, with the field named as the client wrote it. */
export function fieldErrors(errors: readonly ErrorObject[], part: string | undefined): FieldError[] {
  // A union (`anyOf`) fails once per branch: its errors become one message that names each way to be right.
  const unions = new Set(errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.instancePath));
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of errors) {
    const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    let field = base;
    let message = inWords(e);
    if (e.keyword === 'additionalProperties') {
      field = join(base, String(e.params.additionalProperty));
      message =
        part !== 'querystring'
          ? 'is not a known field'
          : field === 'id'
            ? 'is already in the path: send the id once, in the path'
            : 'is not a known query parameter';
    } else if (e.keyword === 'required') {
      field = join(base, String(e.params.missingProperty));
      message = 'is required';
    } else if (e.keyword === 'enum') {
      message = `must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}`;
    } else if (e.keyword === 'anyOf' || e.keyword === 'oneOf') {
      message = unionMessage(errors.filter((o) => o.instancePath === e.instancePath && o !== e));
    } else if (unions.has(e.instancePath)) {
      continue; // said by its union's message
    }
    const key = `${field}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ field: field || part || 'body', message });
  }
  return out;
}

/** JSON types as a client would name them. */
const TYPE_WORDS: Readonly<Record<string, string>> = {
  integer: 'a whole number',
  number: 'a number',
  string: 'text',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'a list',
  null: 'null',
};

/** The formats the schemas use, in words. */
const FORMAT_WORDS: Readonly<Record<string, string>> = {
  email: 'an e-mail address',
  date: 'a date, YYYY-MM-DD',
  uri: 'an absolute URL',
};

/** The patterns the schemas use, in words: Ajv would quote the regular expression. */
const PATTERN_WORDS: Readonly<Record<string, string>> = {
  '^[A-Fa-f]?$': 'be one letter from A to F, or empty',
  '^[^/?#\\s]*$': 'hold no slash, question mark, hash or white space',
  '^(\\d{1,5}x\\d{1,5})?$': 'be WIDTHxHEIGHT in pixels (such as 300x200), or empty',
  '^\\d{4}-\\d{2}-\\d{2}$': 'be a date, YYYY-MM-DD',
  '^[^\\u0000]*$': 'hold no NUL character (%00): no stored text has one',
};

/** An Ajv error's message in words, beginning with "must" like Ajv's own. */
function inWords(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'type': {
      const types = String(p.type).split(',');
      return `must be ${types.map((t) => TYPE_WORDS[t] ?? t).join(' or ')}`;
    }
    case 'format':
      return `must be ${FORMAT_WORDS[String(p.format)] ?? `in the ${String(p.format)} format`}`;
    case 'pattern':
      return `must ${PATTERN_WORDS[String(p.pattern)] ?? 'be in the accepted form'}`;
    case 'maxLength':
      return `must be at most ${String(p.limit)} characters long`;
    case 'minLength':
      return `must be at least ${String(p.limit)} characters long`;
    case 'maximum':
      return `must be ${String(p.limit)} or less`;
    case 'minimum':
      return `must be ${String(p.limit)} or more`;
    case 'exclusiveMaximum':
      return `must be less than ${String(p.limit)}`;
    case 'exclusiveMinimum':
      return `must be more than ${String(p.limit)}`;
    case 'maxItems':
      return `must have at most ${String(p.limit)} items`;
    case 'minItems':
      return `must have at least ${String(p.limit)} items`;
    default:
      return e.message ?? 'is not valid';
  }
}

/** `must be a whole number, or one of: "true", "1"`: the branches of a union, literals together. */
function unionMessage(branches: readonly ErrorObject[]): string {
  const literals = branches
    .filter((b) => b.keyword === 'const')
    .map((b) => (b.params.allowedValue === '' ? 'empty' : JSON.stringify(b.params.allowedValue)));
  const others = branches.filter((b) => b.keyword !== 'const').map((b) => inWords(b).replace(/^must /, ''));
  if (literals.length > 0) {
    const phrase = literals.length > 1 ? `one of: ${literals.join(', ')}` : literals[0]!;
    others.push(others.length > 0 ? phrase : `be ${phrase}`);
  }
  return `must ${[...new Set(others)].join(', or ')}`;
}

function join(base: string, name: string): string {
  return base ? `${base}.${name}` : name;
}
