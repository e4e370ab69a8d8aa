import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { IMAGE_TYPES, type ImageMime, type ImageStorage } from './image-storage.js';

const MIME_OF = Object.fromEntries(Object.entries(IMAGE_TYPES).map(([mime, ext]) => [ext, mime])) as Record<string, ImageMime>;

/**
 * GET /images/<name>: uploaded images, public like the website that shows them. Names are
 * generated and never reused, so a file can be cached for a year. Only generated names are served:
 * no listing, no other files, no path traversal.
 */
export function registerImageFiles(app: FastifyInstance, storage: ImageStorage): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/images/:name',
    {
      schema: {
        summary: 'An uploaded image',
        description: 'Serves an image stored by a blog upload, under the path found in info_img or info_more_images.',
        tags: ['images'],
        params: Type.Object({ name: Type.String({ description: 'Generated file name, e.g. 3f…9a.jpg' }) }),
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      // open() refuses anything but a generated name, so every other path is a plain 404.
      const image = await storage.open(name);
      if (!image) return reply.callNotFound();
      const ext = name.slice(name.lastIndexOf('.') + 1);
      return reply
        .type(MIME_OF[ext] ?? 'application/octet-stream')
        .header('content-length', image.bytes)
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('last-modified', image.modified.toUTCString())
        .header('x-content-type-options', 'nosniff')
        .send(image.stream);
    },
  );
}
