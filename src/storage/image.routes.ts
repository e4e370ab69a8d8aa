import { buffer } from 'node:stream/consumers';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import { NotFoundError } from '../errors.js';
import { mediaRanges } from '../http/accept.js';
import { clientGone } from '../http/client-gone.js';
import type { RateLimitStore } from '../http/rate-limit.js';
import { enforce, RATE_WINDOW_SECONDS } from '../http/rate-limit.js';
import { addVary, noneMatchHas } from '../http/representation.js';
import {
  DEFAULT_QUALITY,
  FORMAT_OF_MIME,
  type ImageProcessor,
  MIME_OF_FORMAT,
  type OutputFormat,
  type VariantRequest,
} from './image-processor.js';
import { IMAGE_TYPES, type ImageMime, type ImageStorage, isImageName, mimeOf, type VariantCacheLimits } from './image-storage.js';

/** A year: the longest max-age caches are asked to honour (RFC 9111 §5.2.2.1 suggests no more). */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The largest side a variant may be asked for; never more than the original's either. */
const MAX_VARIANT_SIDE = 4000;

const FORMATS = ['jpeg', 'png', 'webp', 'avif', 'auto'] as const;
const FITS = ['cover', 'contain', 'inside', 'outside'] as const;

const VariantQuery = Type.Object(
  {
    width: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_VARIANT_SIDE, description: 'Width in pixels; never larger than the original' }),
    ),
    height: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_VARIANT_SIDE, description: 'Height in pixels; never larger than the original' }),
    ),
    fit: Type.Optional(
      Type.Union(
        FITS.map((f) => Type.Literal(f)),
        {
          description:
            'How width and height apply (sharp’s fit): inside (default) fits within both, cover crops to both, contain pads, outside covers both',
        },
      ),
    ),
    format: Type.Optional(
      Type.Union(
        FORMATS.map((f) => Type.Literal(f)),
        {
          description:
            'Output format; auto picks AVIF, then WebP by the Accept header, else the original’s format (and sends Vary: Accept)',
        },
      ),
    ),
    quality: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Quality of a lossy format (JPEG, WebP, AVIF)' })),
  },
  { additionalProperties: false },
);
type VariantQuery = Static<typeof VariantQuery>;

/** Counts a request that makes a new variant; throws the 429 problem past the quota. */
type CountNewVariant = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * RATE_LIMIT_IMAGE_VARIANTS: new variants per minute per client address. Only a variant that is
 * not stored yet is counted (serving a stored one costs a read, making one costs decoding); the
 * shared store, so the quota holds across nodes. Undefined when the limit is off (0).
 */
export function variantRateLimit(perMinute: number, store: RateLimitStore): CountNewVariant | undefined {
  if (perMinute === 0) return undefined;
  const policy = { policy: 'image-variants', quota: perMinute, windowSeconds: RATE_WINDOW_SECONDS };
  return async (request, reply) => {
    const hit = await store.hit(`image-variants:${request.ip}`, RATE_WINDOW_SECONDS, perMinute);
    enforce(reply, [{ ...policy, hit }], () => 'This address');
  };
}

interface VariantOptions {
  readonly processor: ImageProcessor;
  /** What the variant cache keeps; the least recently used go first. */
  readonly cache: VariantCacheLimits;
  readonly newVariants?: CountNewVariant | undefined;
}

/** format=auto: AVIF, then WebP, when Accept names them (not merely through a wildcard); else the original's. */
function negotiated(accept: string | undefined, original: ImageMime): OutputFormat {
  const types = mediaRanges(accept)
    .filter((range) => range.q !== 0)
    .map((range) => range.type);
  if (types.includes('image/avif')) return 'avif';
  if (types.includes('image/webp')) return 'webp';
  return FORMAT_OF_MIME[original];
}

/**
 * The variant's parameters as one canonical key (the cache key and the ETag's suffix): requests
 * that make the same bytes share it, so quality is left out of lossless formats and the default
 * quality is written out.
 */
function variantOf(query: VariantQuery, format: OutputFormat): { request: VariantRequest; key: string } {
  const lossy = format === 'jpeg' || format === 'webp' || format === 'avif';
  const quality = lossy ? (query.quality ?? DEFAULT_QUALITY[format]) : undefined;
  const fit = query.fit ?? 'inside';
  const key = `w${query.width ?? 0}-h${query.height ?? 0}-${fit}${quality ? `-q${quality}` : ''}.${IMAGE_TYPES[MIME_OF_FORMAT[format]]}`;
  return { request: { width: query.width, height: query.height, fit, format, quality }, key };
}

/**
 * GET /images/<name>: uploaded images, public like the website that shows them. Names are
 * generated and never reused, and an image never changes under its name, so the name itself is a
 * strong ETag (no hashing of the bytes) and a file can be cached for a year. Only generated names
 * are served: no listing, no staged objects, no other files, no path traversal. The same for both
 * storage drivers.
 *
 * With parameters, a variant: another size or format made from the image, stored in the image's
 * storage (so every node serves what one made) and immutable like it, since the same image and
 * parameters always make the same bytes; its ETag is the name and the variant's key.
 */
export function registerImageFiles(app: FastifyInstance, storage: ImageStorage, variants: VariantOptions): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/images/:name',
    {
      // Images are compressed already: another encoding would cost CPU and save nothing.
      compress: false,
      schema: {
        summary: 'An uploaded image',
        description:
          'Serves an image stored by a blog upload, under the path found in info_img or info_more_images; a thumbnail under the same path with -thumb before the extension. With width, height, fit, format or quality: another size or format of it, made once and kept. Strong ETag; If-None-Match answers 304.',
        tags: ['images'],
        operationId: 'getImage',
        // The router refuses a longer path parameter (maxParamLength) before the route runs.
        params: Type.Object({ name: Type.String({ maxLength: 100, description: 'Generated file name, e.g. 3f…9a.jpg' }) }),
        querystring: VariantQuery,
      },
      // A new variant counts against RATE_LIMIT_IMAGE_VARIANTS (429); a full variant queue is a 503.
      config: { counted: true, problems: [429, 503] },
    },
    async (request, reply) => {
      const { name } = request.params;
      const query = request.query;
      if (Object.keys(query).length > 0) return sendVariant(request, reply, storage, variants, name, query);
      const etag = `"${name}"`;
      // The client's copy is the image itself, if it still exists: no bytes to read.
      if (noneMatchHas(request.headers['if-none-match'], etag) && (await storage.exists(name))) {
        return reply.code(304).header('etag', etag).header('cache-control', IMMUTABLE).send();
      }
      const image = await storage.open(name);
      if (!image) return absent(reply, name);
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

/** A generated image name that names no stored image: the image was never stored, or has been removed. */
function noSuchImage(name: string): NotFoundError {
  return new NotFoundError(`There is no image ${name}: it was never stored, or was removed with the last record that showed it.`);
}

/** The 404 of a name under /images: one that could be an image's says so; any other path is a plain 404. */
function absent(reply: FastifyReply, name: string) {
  if (!isImageName(name)) return reply.callNotFound();
  throw noSuchImage(name);
}

async function sendVariant(
  request: FastifyRequest,
  reply: FastifyReply,
  storage: ImageStorage,
  options: VariantOptions,
  name: string,
  query: VariantQuery,
) {
  const original = mimeOf(name);
  if (!isImageName(name) || !original) return reply.callNotFound();
  const format = query.format === 'auto' ? negotiated(request.headers.accept, original) : (query.format ?? FORMAT_OF_MIME[original]);
  if (query.format === 'auto') addVary(reply, 'accept');
  const { request: wanted, key } = variantOf(query, format);
  const etag = `"${name}~${key}"`;
  if (noneMatchHas(request.headers['if-none-match'], etag) && (await storage.exists(name))) {
    return reply.code(304).header('etag', etag).header('cache-control', IMMUTABLE).send();
  }
  let data = await storage.readVariant(name, key);
  if (!data) {
    if (!(await storage.exists(name))) return absent(reply, name);
    await options.newVariants?.(request, reply);
    const made = await options.processor.variant(
      async () => {
        const image = await storage.open(name);
        // Removed since it was found (its record was deleted meanwhile): as absent as if never there.
        if (!image) throw noSuchImage(name);
        return buffer(image.stream);
      },
      wanted,
      clientGone(reply),
    );
    await storage.writeVariant(name, key, made.data, options.cache);
    data = made.data;
  }
  return reply
    .type(MIME_OF_FORMAT[format])
    .header('etag', etag)
    .header('cache-control', IMMUTABLE)
    .header('x-content-type-options', 'nosniff')
    .send(data);
}
