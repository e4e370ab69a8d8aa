// The Node.js entry: everything of the browser entry, and images read from a file path.
import { openAsBlob } from 'node:fs';
import path from 'node:path';

export * from './index.js';

/**
 * An image file as an upload for `blogs.create(…, { images })`: read as it is sent, never whole
 * into memory, and named by its file name.
 */
export async function fileImage(file: string): Promise<{ data: Blob; filename: string }> {
  return { data: await openAsBlob(file), filename: path.basename(file) };
}
