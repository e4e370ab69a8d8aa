import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import sharp from 'sharp';
import type { Config, ImageStorageKind } from '../src/config.js';
import { applyRetention } from '../src/content/history/retention.service.js';
import { DatabaseImageStorage } from '../src/storage/database-image-storage.js';
import type { ImageProcessor } from '../src/storage/image-processor.js';
import type { ImageStorage } from '../src/storage/image-storage.js';
import { LocalImageStorage } from '../src/storage/local-image-storage.js';
import { buildTestApp, json, type TestApp } from './helpers.js';

export type ImageFormat = 'jpeg' | 'png' | 'gif' | 'webp' | 'avif';

/** A real image, made for the test: a solid colour (change `shade` for different bytes). */
export async function image(format: ImageFormat, width = 40, height = 30, shade = 0): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: shade % 256, g: 120, b: 200 } } })
    .toFormat(format)
    .toBuffer();
}

/** A JPEG of about `bytes` bytes: random noise compresses badly, so its size follows its area. */
export async function noisyJpeg(bytes: number): Promise<Buffer> {
  const side = Math.ceil(Math.sqrt(bytes / 1.2));
  const pixels = Buffer.alloc(side * side * 3);
  for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 2654435761) >>> 24;
  return sharp(pixels, { raw: { width: side, height: side, channels: 3 } })
    .jpeg({ quality: 95 })
    .toBuffer();
}

export interface BlogTestApp extends TestApp {
  /** The folder images are stored in (this test's own). */
  imagesDir: string;
  /** A public page of the test site to hold blogs. */
  pageId: number;
}

/** A test app with its own data folder (so files on disk can be counted) and a page for blogs. */
export async function buildBlogApp(
  t: TestContext,
  config: Partial<Config> = {},
  options: { processor?: ImageProcessor } = {},
): Promise<BlogTestApp> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'cms-blogs-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const app = await buildTestApp(t, { config: { dataDir, ...config }, ...options });
  const page = await app.app.inject({
    method: 'POST',
    url: '/api/page',
    headers: app.site.headers,
    payload: { page_usertitle: 'Blog' },
  });
  assert.equal(page.statusCode, 201, page.body);
  return { ...app, imagesDir: path.join(dataDir, 'images'), pageId: json(page).data[0].page };
}

/** Every file under the images folder, staging included. */
export async function filesIn(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
  } catch {
    return [];
  }
}

/** Both storage drivers, for suites that run once per driver. */
export const DRIVERS: readonly ImageStorageKind[] = ['local', 'database'];

/** A storage over the same folder or database as the app's own. */
export function storageOf(app: BlogTestApp): ImageStorage {
  return app.config.images.storage === 'database' ? new DatabaseImageStorage(app.db.kysely) : new LocalImageStorage(app.imagesDir);
}

/**
 * Retention with nothing kept but each existing record's latest revision: the images that only
 * older revisions (or deleted records) showed are then removed, as HISTORY_DAYS later would.
 */
export async function forgetHistory(app: BlogTestApp): Promise<void> {
  await applyRetention(app.db.kysely, storageOf(app), 0, 0, new Date(Date.now() + 1000));
}

/** What the app's storage holds, whichever the driver: committed image names and staged objects. */
export async function storedImages(app: BlogTestApp): Promise<{ committed: string[]; staged: number }> {
  if (app.config.images.storage === 'database') {
    const rows = await app.db.kysely.selectFrom('images').select('name').execute();
    return { committed: rows.flatMap((r) => (r.name ? [r.name] : [])).sort(), staged: rows.filter((r) => !r.name).length };
  }
  const files = await filesIn(app.imagesDir);
  const staged = files.filter((f) => f.startsWith(`.staging${path.sep}`));
  return { committed: files.filter((f) => !staged.includes(f)).sort(), staged: staged.length };
}

export type FormPart = string | { file: Buffer; filename: string; type?: string };

/** A multipart/form-data body, serialised by the platform's own FormData encoder. */
export async function form(fields: ReadonlyArray<[string, FormPart]>): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const data = new FormData();
  for (const [name, value] of fields) {
    if (typeof value === 'string') data.append(name, value);
    else data.append(name, new Blob([value.file], { type: value.type ?? 'application/octet-stream' }), value.filename);
  }
  const encoded = new Response(data);
  return {
    payload: Buffer.from(await encoded.arrayBuffer()),
    headers: { 'content-type': encoded.headers.get('content-type') ?? '' },
  };
}

/** POST /api/blog as multipart. */
export async function postForm(app: TestApp, fields: ReadonlyArray<[string, FormPart]>, query = '', headers: Record<string, string> = {}) {
  const body = await form(fields);
  return app.app.inject({
    method: 'POST',
    url: `/api/blog${query}`,
    headers: { ...app.site.headers, ...body.headers, ...headers },
    payload: body.payload,
  });
}
