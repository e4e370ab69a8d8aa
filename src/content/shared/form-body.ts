/**
 * The bodies the hosted platform's clients send besides application/json (docs/compat.md): the
 * record's JSON as the `data` field of a urlencoded or multipart form, with the API credentials
 * beside it as the fields apiID and apiKey when they are not in the headers; and `text/json`, which
 * is JSON. A form is read here, its credentials checked before anything else of it is used, and
 * its `data` held to the route's own body schema.
 */
import type { Readable } from 'node:stream';
import type { Multipart, MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest, preValidationAsyncHookHandler } from 'fastify';
import type { TSchema } from 'typebox';
import { isFields, type LegacyCredentials, legacyCredentialName } from '../../auth/api-key.js';
import { AppError, BadRequestError, PayloadTooLargeError, UnauthorizedError, ValidationError } from '../../errors.js';
import { deleteBody, jsonBody, jsonText } from '../../http/json-body.js';
import { formTypeOf, parseForm } from '../../http/url-encoded.js';
import { validatorFor } from '../../http/validation.js';
import { NoQuery, type operations } from './envelope.js';
import { IdParams, writeBodies } from './schemas.js';

/** The `data` field may carry long HTML, like a JSON body. */
const DATA_FIELD_BYTES = 5 * 1024 * 1024;
/**
 * Types of a `data` part sent as a file (with a file name), as browsers' FormData with a Blob,
 * Python's requests and curl's `-F data=@d.json` send it: JSON's own type, and text/plain, which is
 * also what a part without a Content-Type is (RFC 7578 §4.4). The text is read as UTF-8 (RFC 8259).
 */
const DATA_FILE_TYPES = ['application/json', 'text/plain'];

/** What a write route of the content API accepts as its body, named in its 415. */
const ACCEPTED_BODIES =
  'application/json (or text/json), or the JSON as the field `data` of an application/x-www-form-urlencoded or multipart/form-data form';

/**
 * The content API's parsers besides JSON, in a content plugin scope: `text/json` read exactly as
 * application/json, and urlencoded forms. Any other type is a 415 that names what is accepted.
 */
export function acceptContentBodies(scope: FastifyInstance): void {
  scope.addContentTypeParser('text/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (request.method === 'DELETE') return done(deleteBody(body as Buffer), undefined);
    try {
      done(null, jsonBody(request.headers['content-type'], body as Buffer));
    } catch (error) {
      done(error as Error);
    }
  });
  scope.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: DATA_FIELD_BYTES + 64 * 1024 },
    (request, body, done) =>
      request.method === 'DELETE' ? done(deleteBody(String(body)), undefined) : done(null, parseForm(String(body))),
  );
}

const DATA_TOO_LARGE = `The data field is larger than ${DATA_FIELD_BYTES} bytes, the most a record's JSON may have: shorten the record's texts, and send its images as files of the form.`;

const ONE_DATA_FIELD = 'The form has more than one data field: send the record as one JSON object, in one data field.';

/** What to do about a multipart body the parser cannot read: the usual cause is a boundary written by hand. */
const MALFORMED_FORM_ADVICE =
  'Nothing was stored: let the client build the form (curl -F, or FormData), so that the body and the boundary its Content-Type names agree.';

/** The `data` field's JSON value, held to the same rules as a JSON body (UTF-8, no prototype keys). */
function dataJson(text: string): unknown {
  try {
    return jsonText(text);
  } catch (error) {
    throw new ValidationError([
      { field: 'data', message: `must be the record's JSON object: ${(error as Error).message.replace(/^The body /, '')}` },
    ]);
  }
}

function dataOf(part: Extract<Multipart, { type: 'field' }>): unknown {
  if (part.valueTruncated) throw new PayloadTooLargeError(DATA_TOO_LARGE);
  if (typeof part.value !== 'string') return part.value; // sent as application/json: already parsed
  return dataJson(part.value);
}

async function dataFileOf(part: MultipartFile): Promise<unknown> {
  if (!DATA_FILE_TYPES.includes(part.mimetype)) {
    throw new ValidationError([
      { field: 'data', message: `sent as a file must be ${DATA_FILE_TYPES.join(' or ')} (the record's JSON object), not ${part.mimetype}` },
    ]);
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of parsed<Buffer>(part.file)) {
    bytes += chunk.length;
    if (bytes > DATA_FIELD_BYTES) throw new PayloadTooLargeError(DATA_TOO_LARGE);
    chunks.push(chunk);
  }
  // Busboy stops at its file size limit and marks the stream truncated instead of failing it.
  if (part.file.truncated) throw new PayloadTooLargeError(DATA_TOO_LARGE);
  return dataJson(Buffer.concat(chunks).toString('utf8'));
}

/**
 * Busboy reports a malformed body (no boundary, a part cut short, no closing boundary, bytes that
 * are no form) as a plain Error without a status, which the problem handler would answer as a 500.
 * Only the parser feeds these iterables, so whatever fails in them is the body's fault: a 400.
 * Errors that carry their own status (the plugin's limits, a premature close) keep it, except the
 * plugin's 406 for a field sent as application/json that does not parse: the body is at fault, a 400.
 */
export async function* parsed<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* source;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'FST_INVALID_JSON_FIELD_ERROR') {
      throw new BadRequestError(
        'A form field sent as application/json is not valid JSON: correct it, or send the field as plain text (without that Content-Type), and the answer will say where the JSON goes wrong.',
      );
    }
    if (error instanceof AppError || typeof (error as { statusCode?: unknown }).statusCode === 'number') throw error;
    throw new BadRequestError(`The multipart body is malformed: ${(error as Error).message}. ${MALFORMED_FORM_ADVICE}`);
  }
}

/**
 * How long the parser may hold the request body without reading it, while no part is being read:
 * then it will not go on. @fastify/busboy 3.2.6 never finishes a form after skipping a part over
 * 16 KiB whose Content-Disposition is not form-data, and stops reading the body instead.
 */
export const FORM_SETTLE_MS = 3000;
const FORM_POLL_MS = 100;

/**
 * The parts of `source`, refused as a malformed body (400) when, while the next part is awaited,
 * the request body stays read to its end or paused by the parser (pipe backpressure) for
 * FORM_SETTLE_MS. Reading a part's file is not counted (nothing is awaited from the parser then),
 * nor a slow client: its body is flowing, only waiting for bytes.
 */
export async function* settled<T>(raw: Readable, source: AsyncIterable<T>): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]();
  let stuck = false;
  try {
    while (true) {
      let poll: NodeJS.Timeout | undefined;
      const stall = new Promise<never>((_, reject) => {
        let idleSince = 0;
        poll = setInterval(() => {
          if (!raw.readableEnded && raw.readableFlowing !== false) {
            idleSince = 0;
            return;
          }
          idleSince ||= Date.now();
          if (Date.now() - idleSince < FORM_SETTLE_MS) return;
          stuck = true;
          reject(
            new BadRequestError(`The multipart body is malformed: the parser stopped before the form ended. ${MALFORMED_FORM_ADVICE}`),
          );
        }, FORM_POLL_MS);
      });
      let step: IteratorResult<T>;
      try {
        step = await Promise.race([iterator.next(), stall]);
      } finally {
        clearInterval(poll);
      }
      if (step.done) return;
      yield step.value;
    }
  } finally {
    // A parser that never finishes would never return either: it is left to the collector.
    if (!stuck) await iterator.return?.();
  }
}

/** The limits of a form's parts: `files` and `fileBytes` for the files a route takes besides `data`. */
interface FormLimits {
  readonly files: number;
  readonly fileBytes: number;
}

/**
 * Reads a multipart form: its `data` field (as text or as a file), apiID and apiKey, and, through
 * `onFile`, the files the route takes (without it, any other part is an unknown field). The
 * credentials are checked before the first file is read or `data` is validated, wherever in the
 * form they come, so an anonymous form is refused (401) before any file is stored.
 */
export async function readMultipartForm<T>(
  request: FastifyRequest,
  validate: (data: unknown) => T,
  limits: FormLimits,
  onFile?: (part: MultipartFile) => Promise<void>,
): Promise<T> {
  const parts = parsed(
    settled(
      request.raw,
      request.parts({
        // Room for a data part sent as a file: files are held to their own limits by onFile.
        limits: {
          fileSize: Math.max(limits.fileBytes, DATA_FIELD_BYTES),
          files: limits.files + 1,
          fields: 5,
          parts: limits.files + 5,
          fieldSize: DATA_FIELD_BYTES,
        },
      }),
    ),
  );
  const credentials: { apiId?: unknown; apiKey?: unknown } = {};
  let raw: { value: unknown } | undefined;
  let data: { value: T } | undefined;
  // Once the caller is known, `data` is validated as soon as it is there: a form whose data comes
  // before its files is refused before any file is streamed.
  const settle = async () => {
    if (request.authenticateForm) await request.authenticateForm(credentials as LegacyCredentials);
    if (raw && !data) data = { value: validate(raw.value) };
  };
  for await (const part of parts) {
    const credential = part.type === 'field' ? legacyCredentialName(part.fieldname) : undefined;
    if (credential) {
      if (credentials[credential] !== undefined)
        throw new BadRequestError(`The form has more than one ${part.fieldname} field: send it once.`);
      credentials[credential] = part.type === 'field' ? part.value : undefined;
      continue;
    }
    if (part.fieldname === 'data') {
      if (raw !== undefined) throw new BadRequestError(ONE_DATA_FIELD);
      raw = { value: part.type === 'field' ? dataOf(part) : await dataFileOf(part) };
      if (!request.authenticateForm) await settle();
      continue;
    }
    if (part.type === 'field' || !onFile) {
      throw new ValidationError([{ field: part.fieldname, message: `is not a known form field (${knownFields(onFile)})` }]);
    }
    try {
      await settle();
    } catch (error) {
      // No file is read from an unknown caller, so credentials after the first file come too late: say so.
      const none = credentials.apiId === undefined && credentials.apiKey === undefined;
      if (none && error instanceof UnauthorizedError) {
        throw new UnauthorizedError(
          `${error.message} In a multipart form, apiID and apiKey must come before the first file: no file is read before its sender is known.`,
          error.bearerError,
        );
      }
      throw error;
    }
    await onFile(part);
  }
  await settle();
  if (data === undefined) throw new ValidationError([{ field: 'data', message: "is required: the record's JSON object as text" }]);
  return data.value;
}

function knownFields(files: unknown): string {
  return files ? 'data, apiID, apiKey and the image files' : 'data, apiID and apiKey';
}

/** The `data` and credentials of a urlencoded form, checked in that order; other fields are refused. */
async function urlEncodedRecord<T>(request: FastifyRequest, form: Record<string, unknown>, validate: (data: unknown) => T): Promise<T> {
  const credentials: { apiId?: unknown; apiKey?: unknown } = {};
  for (const [name, value] of Object.entries(form)) {
    const credential = legacyCredentialName(name);
    if (credential) credentials[credential] = value;
    else if (/^\s*[{[]/.test(name)) {
      // `curl -d '{…}'` without a Content-Type sends JSON labelled as a form: the whole body reads as one field's name.
      throw new BadRequestError(
        'The body looks like JSON, but its Content-Type is application/x-www-form-urlencoded (what curl -d sends unless told otherwise): send the header Content-Type: application/json.',
      );
    } else if (name !== 'data') throw new ValidationError([{ field: name, message: `is not a known form field (${knownFields(false)})` }]);
  }
  if (request.authenticateForm) await request.authenticateForm(credentials as LegacyCredentials);
  const data = form.data;
  if (data === undefined) throw new ValidationError([{ field: 'data', message: "is required: the record's JSON object as text" }]);
  if (typeof data !== 'string') throw new BadRequestError(ONE_DATA_FIELD);
  return validate(dataJson(data));
}

/**
 * The route hook that turns a form body into the record its `data` field holds, validated by
 * `validate` (the route's own body validator, naming fields under `data`), after its credentials
 * are checked. `multipart: false` leaves multipart bodies to the handler (blog uploads).
 */
function recordFromForm<T>(validate: (data: unknown) => T, { multipart = true } = {}): preValidationAsyncHookHandler {
  return async (request) => {
    if (request.isMultipart?.()) {
      if (multipart) request.body = await readMultipartForm(request, validate, { files: 0, fileBytes: 0 });
      return;
    }
    const form = request.body;
    if (formTypeOf(request.headers['content-type']) === 'urlencoded' && isFields(form)) {
      request.body = await urlEncodedRecord(request, form, validate);
    }
  };
}

/**
 * A write route's options, taking forms too: the credentials may be the form's apiID and apiKey
 * fields, and `data` is validated by `validate` (see recordFromForm).
 */
export function takingForms<O extends { config: object }>(
  options: O,
  validate: (data: unknown) => unknown,
  handling: { multipart?: boolean } = {},
): O & { config: { formCredentials: true; bodyTypes: string }; preValidation: preValidationAsyncHookHandler } {
  return {
    ...options,
    config: { ...options.config, formCredentials: true, bodyTypes: ACCEPTED_BODIES },
    preValidation: recordFromForm(validate, handling),
  };
}

/**
 * The options of `PATCH <prefix>/<noun>/:id`: the record's write schema, as JSON or as a form's
 * `data`, with the written record as the answer. `write` is the resource's (envelope.ts, operations).
 */
export function patchOptions<S extends TSchema, W extends TSchema>(
  app: FastifyInstance,
  write: ReturnType<typeof operations>['write'],
  {
    operationId,
    prefix,
    noun,
    record,
    written,
    description,
  }: { operationId: string; prefix: string; noun: string; record: S; written: W; description: string },
) {
  return takingForms(
    write(
      `Update a ${noun}`,
      description,
      { operationId, params: IdParams, querystring: NoQuery, body: writeBodies(record, noun), response: { 200: written } },
      { conditional: true },
    ),
    validatorFor(app, { schema: record, method: 'PATCH', url: `${prefix}/${noun}/:id`, httpPart: 'body' }, 'data'),
  );
}
