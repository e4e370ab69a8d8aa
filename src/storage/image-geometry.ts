/**
 * The sizes of image work, before any pixel is touched: an image's size as shown, the crop and
 * the shrink a page's rules ask of it, and the size of a variant held to a pixel budget.
 */
import type { Metadata } from 'sharp';

export type VariantFit = 'cover' | 'contain' | 'inside' | 'outside';

/** The limits of ImageRules that decide the full-size image. */
interface SizeRules {
  readonly maxWidth: number;
  readonly maxHeight: number;
  readonly cropAspect: boolean;
}

/** The aspect crop is skipped when it would remove less than this many pixels a side (rounding). */
const ASPECT_SLACK = 1;

/** Width and height as shown, after the EXIF orientation is applied (5–8 turn the image a quarter). */
export function shownSize(meta: Metadata): { width: number; height: number } {
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
export function planFull(size: { width: number; height: number }, rules: SizeRules): Plan {
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

/** Output size of a variant asked of an image of `size`, made smaller to hold `maxPixels`. */
export function cappedVariant(
  request: { readonly width?: number | undefined; readonly height?: number | undefined; readonly fit: VariantFit },
  size: { width: number; height: number },
  maxPixels: number,
): { width: number | undefined; height: number | undefined } {
  const { width: w, height: h } = request;
  const scaleOf = (target: number | undefined, side: number) => (target === undefined ? undefined : Math.min(1, target / side));
  const sx = scaleOf(w, size.width);
  const sy = scaleOf(h, size.height);
  // The pixels sharp would make: a box (cover, contain) is filled; otherwise the aspect is kept.
  let pixels: number;
  if (sx !== undefined && sy !== undefined && (request.fit === 'cover' || request.fit === 'contain')) {
    pixels = Math.min(w!, size.width) * Math.min(h!, size.height);
  } else {
    const scale = sx === undefined ? (sy ?? 1) : sy === undefined ? sx : request.fit === 'outside' ? Math.max(sx, sy) : Math.min(sx, sy);
    pixels = size.width * scale * size.height * scale;
  }
  if (pixels <= maxPixels) return { width: w, height: h };
  const k = Math.sqrt(maxPixels / pixels);
  if (w === undefined && h === undefined) return { width: Math.max(1, Math.floor(size.width * k)), height: undefined };
  const shrink = (side: number | undefined, original: number) =>
    side === undefined ? undefined : Math.max(1, Math.floor(Math.min(side, original) * k));
  return { width: shrink(w, size.width), height: shrink(h, size.height) };
}
