import type { FitEnum, Metadata, Sharp } from 'sharp';
import { AppError, PayloadTooLargeError, UnprocessableContentError, UnsupportedMediaTypeError } from '../errors.js';
import { cappedVariant, planFull, shownSize, type VariantFit } from './image-geometry.js';
import type { ImageMime } from './image-storage.js';
import { hasTextMetadata } from './text-metadata.js';
import { WorkPool, WorkRefused } from './work-pool.js';

/**
 * What a page asks of the images uploaded to it (spec §2.1), already read from its fields:
 * `maxWidth`/`maxHeight` 0 mean no limit on that side; `cropAspect` crops to exactly
 * maxWidth:maxHeight first (only when both are set, or there is no aspect to crop to).
 */
export interface ImageRules {
  readonly maxWidth: number;
  readonly maxHeight: number;
  readonly cropAspect: boolean;
  /** page_thumb_dimensions, when it names a size. */
  readonly thumbnail?: { readonly width: number; readonly height: number } | undefined;
  /** Thumbnails cropped to exactly that size (page_crop_aspect_thumbs) rather than fitted within it. */
  readonly cropThumbnail: boolean;
}

export const NO_RULES: ImageRules = { maxWidth: 0, maxHeight: 0, cropAspect: false, cropThumbnail: false };

interface ProcessedImage {
  readonly data: Buffer;
  readonly width: number;
  readonly height: number;
  readonly mime: ImageMime;
  /** False when the input was already what the rules ask for and is stored byte for byte. */
  readonly changed: boolean;
}

export type OutputFormat = 'jpeg' | 'png' | 'webp' | 'avif' | 'gif';

export interface VariantRequest {
  readonly width?: number | undefined;
  readonly height?: number | undefined;
  readonly fit: VariantFit;
  readonly format: OutputFormat;
  readonly quality?: number | undefined;
}

/** The output format that keeps an image's own type. */
export const FORMAT_OF_MIME: Record<ImageMime, OutputFormat> = {
  'image/jpeg': 'jpeg',
  'image/png': 'png',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/avif': 'avif',
};
export const MIME_OF_FORMAT: Record<OutputFormat, ImageMime> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
};

/**
 * Quality of every lossy encoding we make, per format: 85 keeps JPEG and WebP photos free of
 * visible artefacts at about half the bytes of 95; AVIF reaches the same look at a lower number.
 * PNG and GIF are lossless; PNG uses zlib level 9 since images are encoded once and served often.
 */
export const DEFAULT_QUALITY: Record<OutputFormat, number> = { jpeg: 85, webp: 85, avif: 60, png: 100, gif: 100 };

/** AVIF effort of stored images: each step up of 9 costs about twice the time for a few percent fewer bytes. */
const AVIF_EFFORT = 4;

function encode(image: Sharp, format: OutputFormat, quality = DEFAULT_QUALITY[format], avifEffort = AVIF_EFFORT): Sharp {
  switch (format) {
    case 'jpeg':
      return image.jpeg({ quality });
    case 'webp':
      return image.webp({ quality });
    case 'avif':
      return image.avif({ quality, effort: avifEffort });
    case 'png':
      return image.png({ compressionLevel: 9 });
    case 'gif':
      return image.gif();
  }
}

/**
 * What one variant may cost. Its decoding is bounded by UPLOAD_MAX_PIXELS like an upload's; its
 * output is fitted within these pixels (AVIF, whose encoder is the slowest and hungriest by far,
 * within fewer, at a lower effort), and its work is stopped past the time limit. The numbers and
 * the measurements behind them are in docs/images.md.
 */
const VARIANT_LIMITS = {
  maxPixels: 4096 * 4096,
  maxAvifPixels: 2048 * 2048,
  avifEffort: 2,
  timeoutSeconds: 10,
} as const;

interface ProcessorOptions {
  /** Uploads decoded at once in this process; the others wait (IMAGE_PROCESSING_CONCURRENCY). */
  readonly concurrency: number;
  /** Largest image accepted, in pixels (UPLOAD_MAX_PIXELS); checked from the header before decoding. */
  readonly maxPixels: number;
  /**
   * Variants made at once, and how many may wait (IMAGE_VARIANT_CONCURRENCY,
   * IMAGE_VARIANT_QUEUE): a pool of their own, so anonymous requests never hold up an upload.
   */
  readonly variants?: { readonly concurrency: number; readonly queue: number } | undefined;
}

type SharpLibrary = typeof import('sharp')['default'];
let library: Promise<SharpLibrary> | undefined;

/**
 * sharp (libvips), loaded by the first image that needs it: a node that is never sent an image
 * keeps the memory the library takes when loaded.
 */
function sharpLibrary(): Promise<SharpLibrary> {
  library ??= import('sharp').then((m) => m.default);
  return library;
}

/** libvips's message when a pipeline ran past its timeout(). */
const TIMED_OUT = /^timeout:/;

/**
 * All image work of the service, with sharp (libvips): its decoding and encoding run on libuv's
 * thread pool, off the event loop. Uploads (authenticated writes) and variants (anyone may ask
 * for one) have pools of their own, so no number of variant requests delays an upload; each pool
 * bounds the images held in memory at once, and the rest wait without holding their file or
 * pixels. The variant queue is bounded: past it a request is refused at once (503) rather than
 * held. A request whose client has gone leaves the queue without being worked on; one already
 * being made runs to its end or its timeout (libvips cannot be stopped otherwise).
 *
 * Every image stored or served is made the same way: turned by its EXIF orientation, in sRGB,
 * without EXIF, XMP, IPTC or text comments (sharp keeps none of them unless asked to, and converts
 * an embedded colour profile to sRGB). An image that needs none of that and fits the rules is kept
 * as sent. The same input and rules always give the same bytes, so a repeated upload stores the
 * same image.
 */
export class ImageProcessor {
  private readonly uploads: WorkPool;
  private readonly variants: WorkPool;

  constructor(private readonly options: ProcessorOptions) {
    this.uploads = new WorkPool({ concurrency: options.concurrency, queue: Number.POSITIVE_INFINITY, what: 'uploaded images' });
    const variants = options.variants ?? { concurrency: 1, queue: 8 };
    this.variants = new WorkPool({ ...variants, what: 'images made on request' });
  }

  /** Work running and waiting in each pool (for tests and measurement). */
  get load() {
    return { uploads: this.uploads.load, variants: this.variants.load };
  }

  /**
   * Refuses all work not yet started (503, as a shutdown should answer it) and all later work;
   * what is running finishes. A shutdown then waits for a few images, not for the queue.
   */
  close(): void {
    this.uploads.close();
    this.variants.close();
  }

  /**
   * Resolves once no image is being worked on. The process must not exit before: an exit waits,
   * blocked, for libvips's threads, where a pending timer could no longer end it.
   */
  async idle(): Promise<void> {
    await Promise.all([this.uploads.idle(), this.variants.idle()]);
  }

  /** Reads the header only (no pixels are decoded), and refuses what is too large to decode. */
  private async inspect(input: Buffer, label: string): Promise<Metadata> {
    const sharp = await sharpLibrary();
    let meta: Metadata;
    try {
      meta = await sharp(input, { limitInputPixels: false }).metadata();
    } catch {
      throw new UnsupportedMediaTypeError(`${label}: the image cannot be read.`);
    }
    this.checkPixels(meta.width ?? 0, (meta.pageHeight ?? meta.height ?? 0) * (meta.pages ?? 1), label);
    return meta;
  }

  /** UPLOAD_MAX_PIXELS, for a size read from a header (all frames of an animation count). */
  checkPixels(width: number, height: number, label: string): void {
    if (width * height > this.options.maxPixels) {
      throw new PayloadTooLargeError(
        `${label} is ${width}×${height} pixels; images may have at most ${this.options.maxPixels} pixels (UPLOAD_MAX_PIXELS).`,
      );
    }
  }

  private async open(input: Buffer, meta: Metadata, timeoutSeconds?: number): Promise<Sharp> {
    const sharp = await sharpLibrary();
    // sharp applies limitInputPixels to one frame; inspect() has counted all of them.
    const image = sharp(input, { animated: (meta.pages ?? 1) > 1, limitInputPixels: this.options.maxPixels }).autoOrient();
    return timeoutSeconds === undefined ? image : image.timeout({ seconds: timeoutSeconds });
  }

  /**
   * The stored image and its thumbnail under a page's rules. The full-size image is cropped to the
   * rules' aspect (where the picture's interest is, by libvips's attention strategy; centred for an
   * animation) and fitted within the limits; the thumbnail is made from the original likewise.
   * `label` names the upload in errors.
   */
  async process(
    read: () => Promise<Buffer>,
    mime: ImageMime,
    rules: ImageRules,
    label: string,
    signal?: AbortSignal,
  ): Promise<{ full: ProcessedImage; thumbnail?: ProcessedImage }> {
    return this.uploads.run(async () => {
      const input = await read();
      const meta = await this.inspect(input, label);
      const format = FORMAT_OF_MIME[mime];
      const size = shownSize(meta);
      const animated = (meta.pages ?? 1) > 1;
      const position = animated ? 'centre' : (await sharpLibrary()).strategy.attention;
      const plan = planFull(size, rules);
      const clean =
        (meta.orientation ?? 1) === 1 &&
        !meta.exif &&
        !meta.xmp &&
        !meta.iptc &&
        !meta.icc &&
        !(meta.comments && meta.comments.length > 0) &&
        !hasTextMetadata(input, mime);
      let full: ProcessedImage;
      if (clean && !plan.crop && !plan.fit) {
        full = { data: input, ...size, mime, changed: false };
      } else {
        let image = await this.open(input, meta);
        if (plan.crop) image = image.resize({ ...plan.crop, fit: 'cover', position });
        else if (plan.fit) image = image.resize({ ...plan.fit, fit: 'inside', withoutEnlargement: true });
        full = await this.finish(encode(image, format), mime, label);
      }
      if (!rules.thumbnail) return { full };
      // The thumbnail follows the same rules with its own box: cropped to its aspect when asked,
      // shrunk to fit, never enlarged (a smaller original gives a smaller thumbnail).
      const { width, height } = rules.thumbnail;
      const thumbPlan = planFull(size, { maxWidth: width, maxHeight: height, cropAspect: rules.cropThumbnail });
      let thumb = await this.open(input, meta);
      if (thumbPlan.crop) thumb = thumb.resize({ ...thumbPlan.crop, fit: 'cover', position });
      else if (thumbPlan.fit) thumb = thumb.resize({ ...thumbPlan.fit, fit: 'inside', withoutEnlargement: true });
      return { full, thumbnail: await this.finish(encode(thumb, format), mime, label) };
    }, signal);
  }

  /**
   * An image made on request from a stored one (GET /images/<name>?width=…); never enlarged, and
   * never past VARIANT_LIMITS. `signal`: the client's request, aborted when it goes away.
   */
  async variant(read: () => Promise<Buffer>, request: VariantRequest, signal?: AbortSignal): Promise<ProcessedImage> {
    return this.variants.run(async () => {
      const input = await read();
      const meta = await this.inspect(input, 'The stored image');
      // Reading the image took a while: its client may have gone meanwhile.
      if (signal?.aborted) throw new WorkRefused('aborted', 'The request was closed before its image was made.');
      const avif = request.format === 'avif';
      const box = cappedVariant(request, shownSize(meta), avif ? VARIANT_LIMITS.maxAvifPixels : VARIANT_LIMITS.maxPixels);
      let image = await this.open(input, meta, VARIANT_LIMITS.timeoutSeconds);
      if (box.width !== undefined || box.height !== undefined) {
        image = image.resize({ ...box, fit: request.fit as keyof FitEnum, withoutEnlargement: true });
      }
      const encoded = encode(image, request.format, request.quality, avif ? VARIANT_LIMITS.avifEffort : AVIF_EFFORT);
      return this.finish(encoded, MIME_OF_FORMAT[request.format], 'The stored image');
    }, signal);
  }

  /**
   * Runs the pipeline. libvips fails on pixel data it cannot decode (a file cut short, a corrupt
   * stream, though its header read well): that is the file's fault, a 422 naming it, never a 500.
   */
  private async finish(image: Sharp, mime: ImageMime, label: string): Promise<ProcessedImage> {
    try {
      const { data, info } = await image.toBuffer({ resolveWithObject: true });
      return { data, width: info.width, height: info.pageHeight ?? info.height, mime, changed: true };
    } catch (error) {
      if (error instanceof AppError) throw error;
      if (error instanceof Error && TIMED_OUT.test(error.message)) {
        throw new WorkRefused('timeout', `Making this image took longer than ${VARIANT_LIMITS.timeoutSeconds} seconds; it was stopped.`);
      }
      throw new UnprocessableContentError(`${label}: its pixel data cannot be decoded (the file is damaged or cut short).`);
    }
  }
}
