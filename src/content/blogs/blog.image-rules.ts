/**
 * A page's image fields (spec §2.1) as the rules its blogs' uploads are processed under:
 *
 * - page_crop_width × page_crop_height: the largest a stored image may be; 0 (or less) on a side
 *   is no limit on that side. Images are shrunk to fit, keeping their aspect, never enlarged.
 * - page_crop_aspect (a boolean in the spec): the image is first cropped to exactly the aspect
 *   page_crop_width:page_crop_height. With a side unlimited there is no aspect, and nothing is
 *   cropped.
 * - page_thumb_dimensions `WIDTHxHEIGHT` (the page routes accept only that form or ''): a thumbnail
 *   of that size; '' or 0x0 makes none, a 0 side is no limit on that side.
 * - page_crop_aspect_thumbs: the thumbnail is cropped to exactly that size, otherwise fitted within it.
 */
import type { ImageRules } from '../../storage/image-processor.js';

export interface PageImageFields {
  page_crop_width: number;
  page_crop_height: number;
  page_crop_aspect: number;
  page_crop_aspect_thumbs: number;
  page_thumb_dimensions: string;
}

const side = (n: number) => (Number.isInteger(n) && n > 0 ? n : 0);

export function rulesOfPage(page: PageImageFields): ImageRules {
  const thumb = /^(\d+)x(\d+)$/.exec(page.page_thumb_dimensions);
  const thumbWidth = thumb ? side(Number(thumb[1])) : 0;
  const thumbHeight = thumb ? side(Number(thumb[2])) : 0;
  return {
    maxWidth: side(page.page_crop_width),
    maxHeight: side(page.page_crop_height),
    cropAspect: page.page_crop_aspect === 1,
    thumbnail: thumbWidth > 0 || thumbHeight > 0 ? { width: thumbWidth, height: thumbHeight } : undefined,
    cropThumbnail: page.page_crop_aspect_thumbs === 1,
  };
}

/**
 * The rules as a short text stored with each image (blog_images.rules): images whose text differs
 * from their page's today are the ones `cms images reprocess` remakes. Rules that act the same
 * give the same text (a crop flag without both sides crops nothing).
 */
export function rulesKey(rules: ImageRules): string {
  const crop = rules.cropAspect && rules.maxWidth > 0 && rules.maxHeight > 0 ? '-crop' : '';
  const full = `${rules.maxWidth}x${rules.maxHeight}${crop}`;
  if (!rules.thumbnail) return full;
  const { width, height } = rules.thumbnail;
  const cropThumb = rules.cropThumbnail && width > 0 && height > 0 ? '-crop' : '';
  return `${full};thumb-${width}x${height}${cropThumb}`;
}
