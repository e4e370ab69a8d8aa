/**
 * The last pass over the generated document (@fastify/swagger's transformObject), for what a
 * generator needs and the route schemas do not say: named components in place of inline schemas,
 * the conditional and rate-limit headers, `security: []` on public operations, and the limits of
 * every scalar. The route schemas are not touched: this runs on the document's own copy.
 */

/** Marks a schema that documentRoute wants as the named component (its $id in the route schema). */
export const COMPONENT = 'x-component';
/** Marks an operation whose route honours If-Match and If-None-Match (OperationNotes.conditional). */
export const CONDITIONAL = 'x-conditional';
/** Marks an operation whose answers a rate limit counts (RateLimit and RateLimit-Policy on them). */
export const COUNTED = 'x-counted';
/** Marks an operation that answers no other origin: an HTML page (src/http/cors.ts). */
export const SAME_ORIGIN = 'x-same-origin';

/** The limits the document's scalars are bounded by where their schema names none. */
interface DocumentLimits {
  /** The largest request body (Fastify's bodyLimit): no string in a body is longer, and every text the API sends came in through one. */
  readonly bodyBytes: number;
  /** Node's limit on the request line and headers together: no query, path or header value is longer. */
  readonly headerBytes: number;
  /** The largest uploaded file (UPLOAD_MAX_FILE_BYTES). */
  readonly fileBytes: number;
  /** The most files in one upload (UPLOAD_MAX_FILES). */
  readonly files: number;
}

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

type Json = Record<string, unknown>;
/** The document as @fastify/swagger makes it: JSON, read loosely. */
type Doc = Json & { paths?: Record<string, Record<string, Json>>; components?: Record<string, Record<string, unknown>> };
type Response = { headers?: Record<string, unknown> };

const header = (description: string, schema: Json) => ({ description, schema });

/** Response headers and request parameters, each declared once and referenced. */
function documentHeaders(limits: DocumentLimits) {
  const text = { type: 'string', maxLength: limits.headerBytes };
  return {
    headers: {
      ETag: header('The strong entity tag of the representation: send it as If-None-Match (304) or If-Match (412 when stale)', {
        type: 'string',
        maxLength: 200,
        pattern: '^"[^"]*"$',
      }),
      Location: header('The path of the created record, relative to the request (/api/page/42)', {
        type: 'string',
        format: 'uri-reference',
        maxLength: 200,
      }),
      RateLimit: header('What is left of each counter this request was counted in (r) and the seconds until its window ends (t)', {
        type: 'string',
        maxLength: 500,
      }),
      'RateLimit-Policy': header('The counters this request was counted in: their quota (q) per window of w seconds', {
        type: 'string',
        maxLength: 500,
      }),
      'Retry-After': header('Seconds to wait before trying again', { type: 'integer', format: 'int32', minimum: 0, maximum: 3600 }),
      'Access-Control-Allow-Origin': header(
        'Which origins’ browser apps may read the answer: * (CORS_ORIGINS default), or the request’s Origin when CORS_ORIGINS lists it',
        { type: 'string', maxLength: limits.headerBytes },
      ),
    },
    parameters: {
      IfMatch: {
        in: 'header',
        name: 'If-Match',
        required: false,
        description:
          'Write only if the record’s current ETag is one of these (`*`: if it exists); otherwise 412 and nothing is written. Weak tags never match.',
        schema: text,
      },
      IfNoneMatch: {
        in: 'header',
        name: 'If-None-Match',
        required: false,
        description:
          'On a read: 304 without a body when the current ETag is one of these. On a write: 412 when it is (`*`: when the record exists).',
        schema: text,
      },
    },
  };
}

const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export function finishDocument(doc: Doc, limits: DocumentLimits): Doc {
  doc.components ??= {};
  const components = doc.components;
  components.schemas ??= {};
  const schemas = components.schemas as Record<string, Json>;
  hoistComponents(doc.paths ?? {}, schemas);
  const declared = documentHeaders(limits);
  components.headers = { ...components.headers, ...declared.headers };
  components.parameters = { ...components.parameters, ...declared.parameters };
  for (const item of Object.values(doc.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation) finishOperation(method, operation);
    }
  }
  bound(doc.paths, 'body', limits);
  bound(components.schemas, 'body', limits);
  return doc;
}

/** Every schema documentRoute marked is replaced by a reference to the component of its name. */
function hoistComponents(node: unknown, schemas: Record<string, Json>): void {
  if (Array.isArray(node)) {
    for (const item of node) hoistComponents(item, schemas);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const object = node as Json;
  for (const [key, value] of Object.entries(object)) {
    if (value && typeof value === 'object' && typeof (value as Json)[COMPONENT] === 'string') {
      const { [COMPONENT]: name, ...schema } = value as Json;
      schemas[name as string] = schema;
      hoistComponents(schema, schemas);
      object[key] = ref('schemas', name as string);
    } else hoistComponents(value, schemas);
  }
}

function finishOperation(method: string, operation: Json): void {
  const conditional = operation[CONDITIONAL] === true;
  const counted = operation[COUNTED] === true;
  const sameOrigin = operation[SAME_ORIGIN] === true;
  delete operation[CONDITIONAL];
  delete operation[COUNTED];
  delete operation[SAME_ORIGIN];
  // An operation that names no credentials takes none: said outright, as generators need.
  operation.security ??= [];
  const authenticated = (operation.security as unknown[]).length > 0;
  const responses = (operation.responses ?? {}) as Record<string, Response>;
  // A GET that answers 304 has an ETag on its 200 (the authorization server's own documents have none).
  const reads = method === 'get' && '304' in responses;
  if (reads || conditional) {
    const names = reads ? ['IfNoneMatch'] : ['IfMatch', 'IfNoneMatch'];
    operation.parameters = [...((operation.parameters as unknown[]) ?? []), ...names.map((name) => ref('parameters', name))];
  }
  for (const [status, response] of Object.entries(responses)) {
    const headers: Record<string, unknown> = { ...response.headers };
    const success = status.startsWith('2');
    // Every GET's 200 has a strong ETag; a conditional write answers the record's, its 304 the current one.
    if ((success && method !== 'delete' && (reads || conditional)) || status === '304') headers.ETag = ref('headers', 'ETag');
    if (status === '201') headers.Location = ref('headers', 'Location');
    // A request without valid credentials is refused before it is counted (the token endpoints
    // count first: their 401 is counted too).
    if (counted && !(authenticated && status === '401') && status !== '304') {
      headers.RateLimit = ref('headers', 'RateLimit');
      headers['RateLimit-Policy'] = ref('headers', 'RateLimit-Policy');
    }
    if (status === '429' || status === '503') headers['Retry-After'] = ref('headers', 'Retry-After');
    // Every answer of the API's paths, errors included, may be read by browser apps of other origins.
    if (!sameOrigin) headers['Access-Control-Allow-Origin'] = ref('headers', 'Access-Control-Allow-Origin');
    if (Object.keys(headers).length > 0) response.headers = headers;
  }
}

/**
 * Bounds each scalar whose schema names no limit, by the limit the service holds it to anyway:
 * a string by the request part it travels in (a body, or the request line and headers), a file
 * by the upload limit; an integer is 32-bit unless its range says otherwise, as every integer
 * column and counter of the API is. Integers get the format their range implies.
 */
function bound(node: unknown, part: 'body' | 'header', limits: DocumentLimits): void {
  if (Array.isArray(node)) {
    for (const item of node) bound(item, part, limits);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const schema = node as Json;
  if (typeof schema.in === 'string' && schema.schema) {
    bound(schema.schema, 'header', limits);
    return;
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes('string') && schema.maxLength === undefined && schema.enum === undefined && schema.const === undefined) {
    schema.maxLength = schema.format === 'binary' ? limits.fileBytes : part === 'header' ? limits.headerBytes : limits.bodyBytes;
  }
  // A form's file fields (repeatable) hold at most the upload's files.
  if (types.includes('array') && schema.maxItems === undefined && (schema.items as Json | undefined)?.format === 'binary') {
    schema.maxItems = limits.files;
  }
  if (types.includes('integer')) {
    if (schema.minimum === undefined && schema.exclusiveMinimum === undefined) schema.minimum = INT32_MIN;
    if (schema.maximum === undefined && schema.exclusiveMaximum === undefined) schema.maximum = INT32_MAX;
    schema.format ??= Number(schema.minimum) >= INT32_MIN && Number(schema.maximum) <= INT32_MAX ? 'int32' : 'int64';
  }
  for (const [key, value] of Object.entries(schema)) bound(value, key === 'headers' ? 'header' : part, limits);
}
