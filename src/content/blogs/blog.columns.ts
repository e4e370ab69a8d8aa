/**
 * A blog write's body as the columns it stores: the fields copied from the body (converted to
 * their stored form) and the image columns planImages decided.
 */
import type { Static } from 'typebox';
import { BLOG_FIELDS, BLOG_SYSTEM_FIELDS, type BlogField } from './blog.fields.js';
import type { ImagePlan } from './blog.images.js';
import type { BlogWrite } from './blog.schemas.js';

/** A POST body as the route schema validated it (JSON, or the data field of a multipart form). */
export type BlogInput = Static<typeof BlogWrite>;

export type Stored = Record<string, string | number>;

/** Image fields are decided by planImages; the rest of the writable fields are copied (converted). */
const IMAGE_FIELDS: readonly BlogField[] = ['info_img', 'info_img_json', 'info_more_images'];
export const COPIED_FIELDS = (Object.keys(BLOG_FIELDS) as BlogField[]).filter(
  (f) => !(BLOG_SYSTEM_FIELDS as readonly string[]).includes(f) && !IMAGE_FIELDS.includes(f),
);

/** Field values as stored: info_show as Y/N, booleans as 1/0. */
export function storedChanges(input: BlogInput): Stored {
  const changes: Stored = {};
  for (const field of COPIED_FIELDS) {
    const value = input[field as keyof BlogInput];
    if (value === undefined) continue;
    if (field === 'info_show') changes[field] = value === true || value === 1 || value === 'Y' ? 'Y' : 'N';
    else if (BLOG_FIELDS[field].kind === 'bool') changes[field] = value === true || value === 1 ? 1 : 0;
    else changes[field] = value as string | number;
  }
  return changes;
}

export function imageColumns(plan: ImagePlan): Stored {
  return {
    info_img: plan.info_img,
    info_img_json: plan.info_img_json ? JSON.stringify(plan.info_img_json) : '',
    info_more_images: JSON.stringify(plan.info_more_images),
  };
}
