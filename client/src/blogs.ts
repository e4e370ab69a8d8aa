import type { RequestOptions } from './http.js';
import { Records } from './records.js';
import type { Blog, BlogInput, BlogListItem, BlogQuery, Versioned } from './types.js';

/**
 * An image to upload: a `Blob` (a `File` from an `<input type="file">`, or `fileImage(path)` from
 * `cms-content-api-client/node`), or bytes (a `Uint8Array`, a Node `Buffer`, an `ArrayBuffer`).
 * The server decides the type by the bytes; the name is only the part's file name.
 */
export type ImageSource = Blob | ArrayBuffer | Uint8Array | { data: Blob | ArrayBuffer | Uint8Array; filename?: string; type?: string };

export interface BlogImages {
  /** Becomes `info_img` (and `info_img_json`). */
  primary?: ImageSource;
  /** Added to `info_more_images`, in this order. */
  additional?: ImageSource[];
}

function toBlob(source: ImageSource): { blob: Blob; filename: string } {
  const named = typeof source === 'object' && source !== null && 'data' in source && !(source instanceof Blob);
  const data = named ? source.data : (source as Blob | ArrayBuffer | Uint8Array);
  const type = named ? source.type : undefined;
  const blob = data instanceof Blob ? data : new Blob([data as ArrayBuffer], type ? { type } : {});
  const filename = (named ? source.filename : undefined) ?? (data instanceof Blob && 'name' in data ? String(data.name) : 'image');
  return { blob, filename };
}

/** The blog's JSON and its images as one `multipart/form-data` body, as `POST /api/blog` takes it. */
export function blogForm(input: BlogInput, images: BlogImages): FormData {
  const form = new FormData();
  form.append('data', JSON.stringify(input));
  if (images.primary) {
    const { blob, filename } = toBlob(images.primary);
    form.append('uploadPrimaryImage', blob, filename);
  }
  for (const image of images.additional ?? []) {
    const { blob, filename } = toBlob(image);
    form.append('uploadAdditionalImage', blob, filename);
  }
  return form;
}

export interface BlogWriteOptions extends RequestOptions {
  /** Images sent with the blog, in the same request (multipart): the blog and its images are stored together or not at all. */
  images?: BlogImages;
}

/** Blogs (articles): the record operations, plus writes with images. */
export class Blogs extends Records<BlogListItem, Blog, BlogInput, BlogQuery> {
  /**
   * Inserts a blog (without `id`) or updates one (with `id`), with its images in the same
   * request. Without images this is the plain JSON write.
   */
  override async create(input: BlogInput, options: BlogWriteOptions = {}): Promise<Versioned<Blog> & { location: string }> {
    const { images, ...request } = options;
    if (!images) return super.create(input, request);
    const { body, response } = await this.transport.json<{ data: Blog[] }>({
      method: 'POST',
      path: this.path,
      form: blogForm(input, images),
      ...request,
    });
    return { data: body.data[0]!, etag: response.headers.get('etag') ?? '', location: response.headers.get('location') ?? '' };
  }
}
