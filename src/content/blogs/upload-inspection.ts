/**
 * What an upload is, read from its bytes while they stream to staged storage (never held whole in
 * memory): its type, sniffed from the first bytes, its SHA-256, its size and its head (from which
 * staged-uploads.ts reads the dimensions).
 */
import { createHash } from 'node:crypto';
import { fileTypeFromBuffer } from 'file-type';
import { PayloadTooLargeError, UnsupportedMediaTypeError } from '../../errors.js';
import { IMAGE_TYPES, type ImageMime } from '../../storage/image-storage.js';

/** file-type decides from the first 4100 bytes. */
const SNIFF_BYTES = 4100;
/** image-size reads dimensions from the start of a file; 512 KB is what its own file reader uses. */
const HEAD_BYTES = 512 * 1024;
export const ACCEPTED = 'Only JPEG, PNG, GIF, WebP and AVIF images are accepted';

export const fileTooLarge = (label: string, maxBytes: number) =>
  new PayloadTooLargeError(
    `${label} is larger than ${maxBytes} bytes, the most a file may have (UPLOAD_MAX_FILE_BYTES): send a smaller file.`,
  );

export interface Inspection {
  sha256: string;
  bytes: number;
  mime: ImageMime;
  head: Buffer;
}

/**
 * Passes the bytes through once the first ones show an accepted image type, and records what the
 * upload needs in `result` once they have all passed: the hash, the size, the type and the head.
 */
export async function* inspected(
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
