import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { noneMatchHas } from '../http/etag.js';
import { type ImageStorage, mimeOf } from './image-storage.js';

/** A year: the longest max-age caches are asked to honour (RFC 9111 §5.2.2.1 suggests no more). */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * GET /images/<name>: uploaded images, public like the website that shows them. Names are
 * generated and never reused, and an image never changes under its name, so the name itself is a
 * strong ETag (no hashing of the bytes) and a file can be cached for a year. Only generated names
 * are served: no listing, no staged objects, no other files, no path traversal. The same for both
 * storage drivers.
 */
export function registerImageFiles(app: FastifyInstance, storage: ImageStorage): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/images/:name',
    {
      // Images are compressed already: another encoding would cost CPU and save nothing.
      compress: false,
      schema: {
        summary: 'An uploaded image',
        description:
          'Serves an image stored by a blog upload, under the path found in info_img or info_more_images. Strong ETag; If-None-Match answers 304.',
        tags: ['images'],
        params: Type.Object({ name: Type.String({ description: 'Generated file name, e.g. 3f…9a.jpg' }) }),
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      const etag = `"${name}"`;
      // The client's copy is the image itself, if it still exists: no bytes to read.
      if (noneMatchHas(request.headers['if-none-match'], etag) && (await storage.exists(name))) {
        return reply.code(304).header('etag', etag).header('cache-control', IMMUTABLE).send();
      }
      // open() refuses anything but a generated name, so every other path is a plain 404.
      const image = await storage.open(name);
      if (!image) return reply.callNotFound();
      return reply
        .type(mimeOf(name) ?? 'application/octet-stream')
        .header('content-length', image.bytes)
        .header('etag', etag)
        .header('cache-control', IMMUTABLE)
        .header('last-modified', image.modified.toUTCString())
        .header('x-content-type-options', 'nosniff')
        .send(image.stream);
    },
  );
}
