/**
 * The multipart form of POST /api/blog (spec §4.5): the `data` field and the image files. Files
 * are streamed to staged storage while they arrive (never held whole in memory), checked by their
 * bytes, hashed and measured on the way. Whatever fails, nothing staged is left behind.
 */
import { createHash } from 'node:crypto';
import type { MultipartFile } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { fileTypeFromBuffer } from 'file-type';
import { imageSize } from 'image-size';
import type { Config } from '../../config.js';
import { BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from '../../errors.js';
import { IMAGE_PATH_PREFIX, IMAGE_TYPES, type ImageMime, type ImageStorage, newImageName } from '../../storage/image-storage.js';
import { parsed, readMultipartForm } from '../shared/form-body.js';
import { INT32_MAX } from '../shared/schemas.js';
import type { ReceivedImage } from './blog.images.js';
import type { ImageRole } from './blog.table.js';

/** Form fields for files, newer names first; the older names are accepted the same (spec §4.5). */
const FILE_FIELDS: Readonly<Record<string, ImageRole>> = {
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
const ACCEPTED = 'Only JPEG, PNG, GIF, WebP and AVIF images are accepted';

const fileTooLarge = (label: string, maxBytes: number) =>
  new PayloadTooLargeError(
    `${label} is larger than ${maxBytes} bytes, the most a file may have (UPLOAD_MAX_FILE_BYTES): send a smaller file.`,
  );

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
    if (bytes > maxBytes) throw fileTooLarge(label, maxBytes);
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
    if (part.file.truncated) throw fileTooLarge(label, maxBytes);
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
      field: part.fieldname,
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

interface BlogForm<T> {
  data: T;
  uploads: ReceivedImage[];
}

/**
 * Reads the whole form (form-body.ts): its credentials first, then `data`, held to the route's
 * schema by `validate`, and the image files, staged as they arrive. On any error every staged file
 * is discarded.
 */
export async function readBlogForm<T>(
  request: FastifyRequest,
  storage: ImageStorage,
  limits: Config['uploads'],
  validate: (data: unknown) => T,
): Promise<BlogForm<T>> {
  const uploads: ReceivedImage[] = [];
  try {
    const data = await readMultipartForm(request, validate, { files: limits.maxFiles, fileBytes: limits.maxFileBytes }, async (part) => {
      const role = FILE_FIELDS[part.fieldname];
      if (!role) {
        throw new ValidationError([
          { field: part.fieldname, message: `is not a known form field (files: ${Object.keys(FILE_FIELDS).join(', ')})` },
        ]);
      }
      if (part.filename === '') {
        // A browser form with an empty file input sends an empty part without a name: nothing chosen.
        part.file.resume();
        return;
      }
      if (uploads.length === limits.maxFiles)
        throw new PayloadTooLargeError(
          `The form has more than ${limits.maxFiles} files, the most one request may carry (UPLOAD_MAX_FILES): send fewer images.`,
        );
      if (role === 'primary' && uploads.some((u) => u.role === 'primary')) {
        throw new BadRequestError('Send one primary image (uploadPrimaryImage or primaryImage), not several.');
      }
      uploads.push(await receiveFile(part, role, storage, limits));
    });
    return { data, uploads };
  } catch (error) {
    await Promise.all(uploads.map((u) => storage.discard(u.staged)));
    throw error;
  }
}
