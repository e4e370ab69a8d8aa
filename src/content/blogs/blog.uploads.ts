/**
 * The multipart form of POST /api/blog (spec §4.5): the `data` field and the image files. Files
 * are streamed to staged storage while they arrive (never held whole in memory), checked by their
 * bytes, hashed and measured on the way. Whatever fails, nothing staged is left behind.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Multipart, MultipartFile } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { fileTypeFromBuffer } from 'file-type';
import { imageSize } from 'image-size';
import type { Config } from '../../config.js';
import { AppError, BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from '../../errors.js';
import { IMAGE_PATH_PREFIX, IMAGE_TYPES, type ImageMime, type ImageStorage, newImageName } from '../../storage/image-storage.js';
import { INT32_MAX } from '../shared/schemas.js';
import type { ReceivedImage } from './blog.images.js';
import type { ImageRole } from './blog.table.js';

/** Form fields for files, newer names first; the older names are accepted the same (spec §4.5). */
export const FILE_FIELDS: Readonly<Record<string, ImageRole>> = {
  uploadPrimaryImage: 'primary',
  uploadAdditionalImage: 'additional',
  uploadAdditionalImages: 'additional',
  primaryImage: 'primary',
  additionalImage: 'additional',
  additionalImages: 'additional',
};

/** file-type decides from the first 4100 bytes. */
const SNIFF_BYTES = 4100;
/** image-size reads dimensions from the start of a file; 512 KB is what its own file reader uses. */
const HEAD_BYTES = 512 * 1024;
/** The `data` field may carry long HTML, like a JSON body. */
const DATA_FIELD_BYTES = 5 * 1024 * 1024;
/**
 * Types of a `data` part sent as a file (with a file name), as browsers' FormData with a Blob,
 * Python's requests and curl's `-F data=@d.json` send it: JSON's own type, and text/plain, which is
 * also what a part without a Content-Type is (RFC 7578 §4.4). The text is read as UTF-8 (RFC 8259).
 */
const DATA_FILE_TYPES = ['application/json', 'text/plain'];

const ACCEPTED = 'Only JPEG, PNG, GIF, WebP and AVIF images are accepted';

interface Inspection {
  sha256: string;
  bytes: number;
  mime: ImageMime;
  head: Buffer;
}

/**
 * Passes the bytes through once the first ones show an accepted image type, and records what the
 * upload needs: the hash, the size, the type and the head (for the dimensions).
 */
async function* inspected(
  source: AsyncIterable<Buffer>,
  label: string,
  maxBytes: number,
  result: Partial<Inspection>,
): AsyncGenerator<Buffer> {
  const hash = createHash('sha256');
  const head: Buffer[] = [];
  let headBytes = 0;
  let bytes = 0;
  let held: Buffer[] | undefined = [];
  const check = async () => {
    const type = await fileTypeFromBuffer(Buffer.concat(head));
    if (!type || !(type.mime in IMAGE_TYPES)) {
      throw new UnsupportedMediaTypeError(`${label}: ${ACCEPTED}; this file is ${type ? type.mime : 'not a recognised image'}.`);
    }
    result.mime = type.mime as ImageMime;
  };
  for await (const chunk of source) {
    hash.update(chunk);
    bytes += chunk.length;
    // The parser's own limit is the larger one a data part may need; an image stops at its own.
    if (bytes > maxBytes) throw new PayloadTooLargeError(`${label} is larger than ${maxBytes} bytes.`);
    if (headBytes < HEAD_BYTES) {
      head.push(chunk.subarray(0, HEAD_BYTES - headBytes));
      headBytes += Math.min(chunk.length, HEAD_BYTES - headBytes);
    }
    if (!held) {
      yield chunk;
      continue;
    }
    held.push(chunk);
    if (headBytes >= SNIFF_BYTES) {
      await check();
      yield* held;
      held = undefined;
    }
  }
  if (held) {
    await check();
    yield* held;
  }
  result.sha256 = hash.digest('hex');
  result.bytes = bytes;
  result.head = Buffer.concat(head);
}

/**
 * Busboy reports a malformed body (no boundary, a part cut short, no closing boundary, bytes that
 * are no form) as a plain Error without a status, which the problem handler would answer as a 500.
 * Only the parser feeds these iterables, so whatever fails in them is the body's fault: a 400.
 * Errors that carry their own status (the plugin's limits, a premature close) keep it, except the
 * plugin's 406 for a field sent as application/json that does not parse: the body is at fault, a 400.
 */
async function* parsed<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* source;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'FST_INVALID_JSON_FIELD_ERROR') {
      throw new BadRequestError('A form field sent as application/json is not valid JSON.');
    }
    if (error instanceof AppError || typeof (error as { statusCode?: unknown }).statusCode === 'number') throw error;
    throw new BadRequestError(`The multipart body is malformed: ${(error as Error).message}.`);
  }
}

function validSide(pixels: number): boolean {
  return Number.isInteger(pixels) && pixels >= 1 && pixels <= INT32_MAX;
}

async function receiveFile(part: MultipartFile, role: ImageRole, storage: ImageStorage, limits: Config['uploads']): Promise<ReceivedImage> {
  const maxBytes = limits.maxFileBytes;
  const label = `${part.fieldname} "${part.filename}"`;
  const found: Partial<Inspection> = {};
  const staged = await storage.stage(inspected(parsed(part.file), label, maxBytes, found));
  try {
    // Busboy stops at the size limit and marks the stream truncated instead of failing it.
    if (part.file.truncated) throw new PayloadTooLargeError(`${label} is larger than ${maxBytes} bytes.`);
    const { sha256, bytes, mime, head } = found as Inspection;
    let size: { width: number; height: number } | undefined;
    try {
      size = imageSize(head);
    } catch {}
    // A header cut or forged can claim any size; no format allows more than 2³¹−1 pixels a side
    // (PNG's limit, the others' are lower), which is also what the integer columns hold.
    if (!size || !validSide(size.width) || !validSide(size.height)) {
      throw new UnsupportedMediaTypeError(`${label}: the ${mime} image cannot be read (${ACCEPTED}).`);
    }
    // From the header, before anything decodes it: a small file may claim a huge picture, and
    // decoding allocates what the header claims.
    if (size.width * size.height > limits.maxPixels) {
      throw new PayloadTooLargeError(
        `${label} is ${size.width}×${size.height} pixels; images may have at most ${limits.maxPixels} pixels (UPLOAD_MAX_PIXELS).`,
      );
    }
    const name = newImageName(mime);
    return {
      role,
      staged,
      name,
      path: `${IMAGE_PATH_PREFIX}${name}`,
      originalName: part.filename,
      sha256,
      bytes,
      width: size.width,
      height: size.height,
      type: mime,
      rules: '',
    };
  } catch (error) {
    await storage.discard(staged);
    throw error;
  }
}

const DATA_TOO_LARGE = `The data field is larger than ${DATA_FIELD_BYTES} bytes.`;

function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ValidationError([{ field: 'data', message: 'must be a JSON object' }]);
  }
}

function dataOf(part: Extract<Multipart, { type: 'field' }>): unknown {
  if (part.valueTruncated) throw new PayloadTooLargeError(DATA_TOO_LARGE);
  if (typeof part.value !== 'string') return part.value; // sent as application/json: already parsed
  return jsonOf(part.value);
}

async function dataFileOf(part: MultipartFile): Promise<unknown> {
  if (!DATA_FILE_TYPES.includes(part.mimetype)) {
    throw new ValidationError([
      {
        field: 'data',
        message: `sent as a file must be ${DATA_FILE_TYPES.join(' or ')} (the blog JSON object), not ${part.mimetype}`,
      },
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
  return jsonOf(Buffer.concat(chunks).toString('utf8'));
}

/**
 * How long the parser may hold the request body without reading it, while no part is being read:
 * then it will not go on. @fastify/busboy 3.2.6 never finishes a form after skipping a part over
 * 16 KiB whose Content-Disposition is not form-data, and stops reading the body instead (seen on
 * Node 20; on Node 24 the same form ends without its data field).
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
          reject(new BadRequestError('The multipart body is malformed: the parser stopped before the form ended.'));
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

export interface BlogForm<T> {
  data: T;
  uploads: ReceivedImage[];
}

/**
 * Reads the whole form. `validate` runs on `data` as soon as it arrives, so a form whose data
 * comes first is refused before any file is streamed. On any error every staged file is discarded.
 */
export async function readBlogForm<T>(
  request: FastifyRequest,
  storage: ImageStorage,
  limits: Config['uploads'],
  validate: (data: unknown) => T,
): Promise<BlogForm<T>> {
  const uploads: ReceivedImage[] = [];
  let data: T | undefined;
  try {
    const parts = parsed(
      settled(
        request.raw,
        request.parts({
          // Room for a data part sent as a file: images are held to their own limits below.
          limits: {
            fileSize: Math.max(limits.maxFileBytes, DATA_FIELD_BYTES),
            files: limits.maxFiles + 1,
            fields: 5,
            parts: limits.maxFiles + 5,
            fieldSize: DATA_FIELD_BYTES,
          },
        }),
      ),
    );
    for await (const part of parts) {
      if (part.type === 'field') {
        if (part.fieldname !== 'data') throw new ValidationError([{ field: part.fieldname, message: 'is not a known form field' }]);
        if (data !== undefined) throw new BadRequestError('The form has more than one data field.');
        data = validate(dataOf(part));
        continue;
      }
      if (part.fieldname === 'data') {
        if (data !== undefined) throw new BadRequestError('The form has more than one data field.');
        data = validate(await dataFileOf(part));
        continue;
      }
      const role = FILE_FIELDS[part.fieldname];
      if (!role) {
        throw new ValidationError([
          { field: part.fieldname, message: `is not a known form field (files: ${Object.keys(FILE_FIELDS).join(', ')})` },
        ]);
      }
      if (part.filename === '') {
        // A browser form with an empty file input sends an empty part without a name: nothing chosen.
        part.file.resume();
        continue;
      }
      if (uploads.length === limits.maxFiles) throw new PayloadTooLargeError(`The form has more than ${limits.maxFiles} files.`);
      if (role === 'primary' && uploads.some((u) => u.role === 'primary')) {
        throw new BadRequestError('Send one primary image (uploadPrimaryImage or primaryImage), not several.');
      }
      uploads.push(await receiveFile(part, role, storage, limits));
    }
    if (data === undefined) throw new ValidationError([{ field: 'data', message: 'is required: the blog JSON object as text' }]);
    return { data, uploads };
  } catch (error) {
    await Promise.all(uploads.map((u) => storage.discard(u.staged)));
    throw error;
  }
}
