/**
 * The bodies the hosted platform's clients send besides application/json (docs/compat.md): the
 * record's JSON as the `data` field of a urlencoded or multipart form, with the API credentials
 * beside it as the fields apiID and apiKey when they are not in the headers; and `text/json`, which
 * is JSON. A form is read here, its credentials checked before anything else of it is used, and
 * its `data` held to the route's own body schema (`validate`).
 */
import multipart, { type Multipart, type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type LegacyCredentials, legacyCredentialName } from '../auth/api-key.js';
import { BadRequestError, PayloadTooLargeError, UnauthorizedError, ValidationError } from '../errors.js';
import { deleteBody, jsonBody, jsonText } from './json-body.js';
import { parsed, settled } from './multipart-stream.js';
import { parseForm } from './url-encoded.js';

/** The `data` field may carry long HTML, like a JSON body. */
const DATA_FIELD_BYTES = 5 * 1024 * 1024;
/**
 * Types of a `data` part sent as a file (with a file name), as browsers' FormData with a Blob,
 * Python's requests and curl's `-F data=@d.json` send it: JSON's own type, and text/plain, which is
 * also what a part without a Content-Type is (RFC 7578 §4.4). The text is read as UTF-8 (RFC 8259).
 */
const DATA_FILE_TYPES = ['application/json', 'text/plain'];

/**
 * A resource's routes that read a body, in a scope of their own that takes the forms: multipart
 * and the parsers of acceptContentBodies. The reads stay outside it. The multipart plugin adds an
 * async onRequest and an async onResponse hook to every route of its scope (for files saved to
 * disk, which no route here does), and a GET, whose body Fastify never reads, would pay their two
 * promises and a listener on every request.
 */
export async function withBodies(app: FastifyInstance, routes: (scope: FastifyInstance) => void): Promise<void> {
  await app.register(async (scope) => {
    await scope.register(multipart);
    acceptContentBodies(scope);
    routes(scope);
  });
}

/**
 * The content API's parsers besides JSON, in a content plugin scope: `text/json` read exactly as
 * application/json, and urlencoded forms. Any other type is a 415 that names what is accepted.
 */
function acceptContentBodies(scope: FastifyInstance): void {
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
export async function readUrlEncodedForm<T>(
  request: FastifyRequest,
  form: Record<string, unknown>,
  validate: (data: unknown) => T,
): Promise<T> {
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
