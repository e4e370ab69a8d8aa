import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import type { FieldError } from '../errors.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const common: Options = {
  allErrors: true,
  // Unknown fields are errors that name the field, never silently dropped.
  removeAdditional: false,
  useDefaults: true,
  strict: false,
};

/**
 * Two validators: query strings and path parameters arrive as text and are coerced to the declared
 * types; JSON bodies are taken as sent, so `"5"` is not an integer and `1` is not a string.
 */
export function installValidators(app: FastifyInstance): void {
  const lenient = addFormats(new Ajv({ ...common, coerceTypes: 'array' }));
  const strict = addFormats(new Ajv({ ...common, coerceTypes: false }));
  app.setValidatorCompiler(({ schema, httpPart, contentType }) => {
    // A multipart body is streamed by its route, which validates what it reads (files are never
    // buffered to be validated here); its schema only documents the form.
    if (httpPart === 'body' && contentType === 'multipart/form-data') return () => true;
    const ajv = httpPart === 'body' ? strict : lenient;
    return ajv.compile(schema);
  });
}

/** Ajv errors → `{field, message}`, with the field named as the client wrote it. */
export function fieldErrors(errors: readonly ErrorObject[], part: string | undefined): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of errors) {
    const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    let field = base;
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'additionalProperties') {
      field = join(base, String(e.params.additionalProperty));
      message = part === 'querystring' ? 'is not a known query parameter' : 'is not a known field';
    } else if (e.keyword === 'required') {
      field = join(base, String(e.params.missingProperty));
      message = 'is required';
    } else if (e.keyword === 'enum') {
      message = `must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}`;
    } else if (e.keyword === 'anyOf' || e.keyword === 'oneOf') {
      continue; // the branch errors already say what is wrong
    }
    const key = `${field}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ field: field || part || 'body', message });
  }
  return out;
}

function join(base: string, name: string): string {
  return base ? `${base}.${name}` : name;
}
