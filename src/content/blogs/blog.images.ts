/**
 * How a POST changes a blog's images: the primary image (info_img, info_img_json), the additional
 * images (info_more_images) and the rows of blog_images. Pure, so the rules of spec §4.4–4.5 and
 * DESIGN §3 "Images and migrateMode" read in one place:
 *
 * - normal write: an uploaded primary image replaces info_img; info_more_images from the body
 *   replaces the list; uploaded additional images are appended to it.
 * - migrateMode: a populated info_img is kept (upload and body value ignored); the list is kept
 *   and only grows: body paths not yet listed, and uploads whose original (file name and SHA-256)
 *   this blog has not seen.
 * - always: the primary image is never listed in info_more_images, neither by path nor as an
 *   upload of the same original; a primary upload of an original the blog already shows reuses
 *   that file rather than storing a copy.
 */
import { IMAGE_PATH_PREFIX, type ImageMime, type StagedImage, thumbnailNameOf } from '../../storage/image-storage.js';
import type { BlogImageRow, ImageRole } from './blog.table.js';

export interface ImageMetadata {
  width: number;
  height: number;
  bytes: number;
  type: string;
  thumbnail?: { src: string; width: number; height: number };
}

/** A thumbnail made under the page's rules, staged beside its image. */
interface ReceivedThumbnail {
  readonly staged: StagedImage;
  readonly width: number;
  readonly height: number;
}

/** An uploaded file, checked and staged, not yet under its public name. */
export interface ReceivedImage {
  readonly role: ImageRole;
  readonly staged: StagedImage;
  /** Generated file name and the public path it will have once committed. */
  readonly name: string;
  readonly path: string;
  readonly originalName: string;
  /** The form field it came in (primaryImage, …), which errors name; absent for an image being reprocessed. */
  readonly field?: string | undefined;
  readonly sha256: string;
  readonly bytes: number;
  readonly width: number;
  readonly height: number;
  readonly type: ImageMime;
  /** Its thumbnail, committed under thumbnailNameOf(name) with it. */
  readonly thumbnail?: ReceivedThumbnail | undefined;
  /** The rules it was made under (rulesKey); '' before the page's rules are applied. */
  readonly rules: string;
}

interface CurrentImages {
  info_img: string;
  info_img_json: ImageMetadata | null;
  info_more_images: string[];
  /** blog_images rows of the blog (what its uploads were). */
  rows: readonly BlogImageRow[];
}

interface ImageRequest {
  info_img?: string;
  info_more_images?: string[];
  uploads: readonly ReceivedImage[];
  migrate: boolean;
  /** Metadata of an image of this website by path, for info_img set to an uploaded image's path. */
  known?: BlogImageRow;
}

export interface ImagePlan {
  info_img: string;
  info_img_json: ImageMetadata | null;
  info_more_images: string[];
  /** Uploads the blog will show: commit them. */
  commit: ReceivedImage[];
  /** Uploads not needed (kept or already-seen originals): discard them. */
  discard: ReceivedImage[];
  /** blog_images rows after the write, without site_id and info_id. */
  rows: Omit<BlogImageRow, 'site_id' | 'info_id'>[];
  /** Paths the blog showed before and no longer does: their files may be removed if unused. */
  dropped: string[];
}

type Original = { original_name: string; sha256: string };

const sameOriginal = (a: Original, b: Original) => a.original_name === b.original_name && a.sha256 === b.sha256;
const originalOf = (u: ReceivedImage): Original => ({ original_name: u.originalName, sha256: u.sha256 });
type Measured = Pick<BlogImageRow, 'path' | 'width' | 'height' | 'bytes' | 'type' | 'thumb_width' | 'thumb_height'>;

/** info_img_json: the stored image, and its thumbnail when it has one. */
export function metadataOf(r: Measured): ImageMetadata {
  const metadata: ImageMetadata = { width: r.width, height: r.height, bytes: r.bytes, type: r.type };
  const name = r.path.slice(IMAGE_PATH_PREFIX.length);
  if (r.thumb_width > 0)
    metadata.thumbnail = { src: `${IMAGE_PATH_PREFIX}${thumbnailNameOf(name)}`, width: r.thumb_width, height: r.thumb_height };
  return metadata;
}

/** The blog_images columns of an upload. */
function rowOf(u: ReceivedImage): Omit<BlogImageRow, 'site_id' | 'info_id' | 'role'> {
  return { original_name: u.originalName, sha256: u.sha256, type: u.type, ...processedColumns(u) };
}

/**
 * The columns of a blog image's row that its processing decides: where the image is, its size
 * and its thumbnail's, and the rules it was made under. The upload's own name, hash and type are
 * the rest (rowOf); a reprocessed image keeps those of its first upload.
 */
export function processedColumns(
  u: ReceivedImage,
): Pick<BlogImageRow, 'path' | 'bytes' | 'width' | 'height' | 'thumb_width' | 'thumb_height' | 'rules'> {
  return {
    path: u.path,
    bytes: u.bytes,
    width: u.width,
    height: u.height,
    thumb_width: u.thumbnail?.width ?? 0,
    thumb_height: u.thumbnail?.height ?? 0,
    rules: u.rules,
  };
}

export function planImages(current: CurrentImages, request: ImageRequest): ImagePlan {
  const { uploads, migrate } = request;
  const commit: ReceivedImage[] = [];
  const discard: ReceivedImage[] = [];
  const rowByPath = new Map(current.rows.map((r) => [r.path, r]));

  let info_img = current.info_img;
  let info_img_json = current.info_img_json;
  let primaryOriginal: Original | undefined = rowByPath.get(info_img);
  const primaryUpload = uploads.find((u) => u.role === 'primary');

  if (migrate && current.info_img !== '') {
    if (primaryUpload) discard.push(primaryUpload);
  } else if (primaryUpload) {
    const shown = current.rows.find((r) => sameOriginal(r, originalOf(primaryUpload)));
    if (shown) {
      discard.push(primaryUpload);
      info_img = shown.path;
      info_img_json = metadataOf(shown);
    } else {
      commit.push(primaryUpload);
      info_img = primaryUpload.path;
      info_img_json = metadataOf(rowOf(primaryUpload));
    }
    primaryOriginal = originalOf(primaryUpload);
  } else if (request.info_img !== undefined && request.info_img !== current.info_img) {
    info_img = request.info_img;
    const known = rowByPath.get(info_img) ?? (request.known?.path === info_img ? request.known : undefined);
    info_img_json = known ? metadataOf(known) : null;
    primaryOriginal = known;
  }

  let more = [...current.info_more_images];
  if (!migrate) {
    if (request.info_more_images !== undefined) more = [...request.info_more_images];
  } else {
    for (const path of request.info_more_images ?? []) if (!more.includes(path)) more.push(path);
  }
  const seen: Original[] = [...current.rows];
  for (const upload of uploads) {
    if (upload.role !== 'additional') continue;
    const original = originalOf(upload);
    const isPrimary = primaryOriginal !== undefined && sameOriginal(primaryOriginal, original);
    if (isPrimary || (migrate && seen.some((s) => sameOriginal(s, original)))) {
      discard.push(upload);
      continue;
    }
    seen.push(original);
    commit.push(upload);
    more.push(upload.path);
  }
  more = [...new Set(more)].filter((p) => p !== '' && p !== info_img);

  const shown = [info_img, ...more].filter((p) => p !== '');
  const uploadByPath = new Map(commit.map((u) => [u.path, u]));
  const rows: ImagePlan['rows'] = [];
  for (const path of shown) {
    const role: ImageRole = path === info_img ? 'primary' : 'additional';
    const upload = uploadByPath.get(path);
    const existing = rowByPath.get(path);
    if (upload) {
      rows.push({ role, ...rowOf(upload) });
    } else if (existing) {
      rows.push({ ...existing, role });
    }
  }
  const dropped = [current.info_img, ...current.info_more_images].filter((p) => p !== '' && !shown.includes(p));
  return { info_img, info_img_json, info_more_images: more, commit, discard, rows, dropped: [...new Set(dropped)] };
}
