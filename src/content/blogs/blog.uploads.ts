/**
 * The multipart form of POST /api/blog (spec §4.5): the `data` field and the image files. Which
 * field is which image, and how many a form may carry; each file is streamed to staged storage
 * while it arrives (never held whole in memory) and checked there (staged-uploads.ts).
 */
import type { MultipartFile } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import { BadRequestError, PayloadTooLargeError, ValidationError } from '../../errors.js';
import { readMultipartForm } from '../../http/form-reader.js';
import { parsed } from '../../http/multipart-stream.js';
import type { ImageRole } from './blog.table.js';
import { fileLabel, type StagedUploads } from './staged-uploads.js';
import { fileTooLarge } from './upload-inspection.js';

/** Form fields for files, newer names first; the older names are accepted the same (spec §4.5). */
const FILE_FIELDS: Readonly<Record<string, ImageRole>> = {
  uploadPrimaryImage: 'primary',
  uploadAdditionalImage: 'additional',
  uploadAdditionalImages: 'additional',
  primaryImage: 'primary',
  additionalImage: 'additional',
  additionalImages: 'additional',
};

/** Busboy stops at its size limit and marks the stream truncated instead of failing it: the stream fails here. */
async function* whole(part: MultipartFile, maxBytes: number): AsyncGenerator<Buffer> {
  yield* parsed<Buffer>(part.file);
  if (part.file.truncated) throw fileTooLarge(fileLabel({ field: part.fieldname, originalName: part.filename }), maxBytes);
}

/**
 * Reads the whole form (http/form-reader.ts): its credentials first, then `data`, held to the route's
 * schema by `validate`, and the image files, staged into `uploads` as they arrive; the caller's
 * withStagedUploads removes them whatever happens next.
 */
export async function readBlogForm<T>(
  request: FastifyRequest,
  uploads: StagedUploads,
  limits: Config['uploads'],
  validate: (data: unknown) => T,
): Promise<T> {
  return readMultipartForm(request, validate, { files: limits.maxFiles, fileBytes: limits.maxFileBytes }, async (part) => {
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
    if (uploads.images.length === limits.maxFiles)
      throw new PayloadTooLargeError(
        `The form has more than ${limits.maxFiles} files, the most one request may carry (UPLOAD_MAX_FILES): send fewer images.`,
      );
    if (role === 'primary' && uploads.images.some((u) => u.role === 'primary')) {
      throw new BadRequestError('Send one primary image (uploadPrimaryImage or primaryImage), not several.');
    }
    await uploads.receive({ role, field: part.fieldname, originalName: part.filename }, whole(part, limits.maxFileBytes), limits);
  });
}
