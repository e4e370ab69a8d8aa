import type { FitEnum, Metadata, Sharp } from 'sharp';
import { PayloadTooLargeError, UnsupportedMediaTypeError } from '../errors.js';
import type { ImageMime } from './image-storage.js';

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

export interface ProcessedImage {
  readonly data: Buffer;
  readonly width: number;
  readonly height: number;
  readonly mime: ImageMime;
  /** False when the input was already what the rules ask for and is stored byte for byte. */
  readonly changed: boolean;
}

export type OutputFormat = 'jpeg' | 'png' | 'webp' | 'avif' | 'gif';
export type VariantFit = 'cover' | 'contain' | 'inside' | 'outside';

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

/** The aspect crop is skipped when it would remove less than this many pixels a side (rounding). */
const ASPECT_SLACK = 1;

function encode(image: Sharp, format: OutputFormat, quality = DEFAULT_QUALITY[format]): Sharp {
  switch (format) {
    case 'jpeg':
      return image.jpeg({ quality });
    case 'webp':
      return image.webp({ quality });
    case 'avif':
      // effort 4 of 9: each step up costs about twice the time for a few percent fewer bytes.
      return image.avif({ quality, effort: 4 });
    case 'png':
      return image.png({ compressionLevel: 9 });
    case 'gif':
      return image.gif();
  }
}

/** A counting semaphore: at most `limit` holders at once, the others wait in arrival order. */
class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

/** Width and height as shown, after the EXIF orientation is applied (5–8 turn the image a quarter). */
function shownSize(meta: Metadata): { width: number; height: number } {
  const turned = (meta.orientation ?? 1) >= 5;
  const width = meta.width ?? 0;
  const height = meta.pageHeight ?? meta.height ?? 0;
  return turned ? { width: height, height: width } : { width, height };
}

/** The largest box of the aspect `aspectWidth:aspectHeight` inside width × height. */
function aspectBox(width: number, height: number, aspectWidth: number, aspectHeight: number): { width: number; height: number } {
  if (width * aspectHeight > height * aspectWidth) return { width: Math.max(1, Math.round((height * aspectWidth) / aspectHeight)), height };
  return { width, height: Math.max(1, Math.round((width * aspectHeight) / aspectWidth)) };
}

interface Plan {
  /** The size to crop to (cover), when the aspect is wrong. */
  crop?: { width: number; height: number };
  /** The box to fit within (inside), when the image is larger. */
  fit?: { width: number | undefined; height: number | undefined };
}

/** The crop and the shrink the rules ask of an image of this size; neither ever enlarges. */
function planFull(size: { width: number; height: number }, rules: ImageRules): Plan {
  const plan: Plan = {};
  let { width, height } = size;
  if (rules.cropAspect && rules.maxWidth > 0 && rules.maxHeight > 0) {
    const box = aspectBox(width, height, rules.maxWidth, rules.maxHeight);
    if (width - box.width > ASPECT_SLACK || height - box.height > ASPECT_SLACK) {
      // Cropping and shrinking in one step: the box scaled down to the limits, never up.
      const scale = Math.min(1, rules.maxWidth / box.width, rules.maxHeight / box.height);
      width = Math.max(1, Math.round(box.width * scale));
      height = Math.max(1, Math.round(box.height * scale));
      plan.crop = { width, height };
      return plan;
    }
  }
  const tooWide = rules.maxWidth > 0 && width > rules.maxWidth;
  const tooHigh = rules.maxHeight > 0 && height > rules.maxHeight;
  if (tooWide || tooHigh) plan.fit = { width: rules.maxWidth || undefined, height: rules.maxHeight || undefined };
  return plan;
}

export interface ProcessorOptions {
  /** Images decoded at once in this process; the others wait (IMAGE_PROCESSING_CONCURRENCY). */
  readonly concurrency: number;
  /** Largest image accepted, in pixels (UPLOAD_MAX_PIXELS); checked from the header before decoding. */
  readonly maxPixels: number;
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

/**
 * All image work of the service, with sharp (libvips): its decoding and encoding run on libuv's
 * thread pool, off the event loop. At most `concurrency` images are worked on at once, because
 * each holds its file and its decoded pixels in memory; the rest wait without holding either.
 *
 * Every image stored or served is made the same way: turned by its EXIF orientation, in sRGB,
 * without EXIF, XMP or IPTC (sharp keeps none of them unless asked to, and converts an embedded
 * colour profile to sRGB). An image that needs none of that and fits the rules is kept as sent.
 * The same input and rules always give the same bytes, so a repeated upload stores the same image.
 */
export class ImageProcessor {
  private readonly slots: Semaphore;

  constructor(private readonly options: ProcessorOptions) {
    this.slots = new Semaphore(options.concurrency);
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

  private async open(input: Buffer, meta: Metadata): Promise<Sharp> {
    const sharp = await sharpLibrary();
    // sharp applies limitInputPixels to one frame; inspect() has counted all of them.
    return sharp(input, { animated: (meta.pages ?? 1) > 1, limitInputPixels: this.options.maxPixels }).autoOrient();
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
  ): Promise<{ full: ProcessedImage; thumbnail?: ProcessedImage }> {
    return this.slots.run(async () => {
      const input = await read();
      const meta = await this.inspect(input, label);
      const format = FORMAT_OF_MIME[mime];
      const size = shownSize(meta);
      const animated = (meta.pages ?? 1) > 1;
      const position = animated ? 'centre' : (await sharpLibrary()).strategy.attention;
      const plan = planFull(size, rules);
      const clean =
        (meta.orientation ?? 1) === 1 && !meta.exif && !meta.xmp && !meta.iptc && !meta.icc && !(meta.comments && meta.comments.length > 0);
      let full: ProcessedImage;
      if (clean && !plan.crop && !plan.fit) {
        full = { data: input, ...size, mime, changed: false };
      } else {
        let image = await this.open(input, meta);
        if (plan.crop) image = image.resize({ ...plan.crop, fit: 'cover', position });
        else if (plan.fit) image = image.resize({ ...plan.fit, fit: 'inside', withoutEnlargement: true });
        full = await this.finish(encode(image, format), mime);
      }
      if (!rules.thumbnail) return { full };
      // The thumbnail follows the same rules with its own box: cropped to its aspect when asked,
      // shrunk to fit, never enlarged (a smaller original gives a smaller thumbnail).
      const { width, height } = rules.thumbnail;
      const thumbPlan = planFull(size, { maxWidth: width, maxHeight: height, cropAspect: rules.cropThumbnail, cropThumbnail: false });
      let thumb = await this.open(input, meta);
      if (thumbPlan.crop) thumb = thumb.resize({ ...thumbPlan.crop, fit: 'cover', position });
      else if (thumbPlan.fit) thumb = thumb.resize({ ...thumbPlan.fit, fit: 'inside', withoutEnlargement: true });
      return { full, thumbnail: await this.finish(encode(thumb, format), mime) };
    });
  }

  /** An image made on request from a stored one (GET /images/<name>?width=…); never enlarged. */
  async variant(read: () => Promise<Buffer>, request: VariantRequest): Promise<ProcessedImage> {
    return this.slots.run(async () => {
      const input = await read();
      const meta = await this.inspect(input, 'the image');
      let image = await this.open(input, meta);
      if (request.width !== undefined || request.height !== undefined) {
        image = image.resize({ width: request.width, height: request.height, fit: request.fit as keyof FitEnum, withoutEnlargement: true });
      }
      return this.finish(encode(image, request.format, request.quality), MIME_OF_FORMAT[request.format]);
    });
  }

  private async finish(image: Sharp, mime: ImageMime): Promise<ProcessedImage> {
    const { data, info } = await image.toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.pageHeight ?? info.height, mime, changed: true };
  }
}
