/**
 * Peak memory of image processing under 20 concurrent uploads of 3 MB photos: each upload's
 * processing as the blog write does it (read the staged file, process under a page's rules of
 * 1200×800 with a 200×200 cropped thumbnail, stage the results), all 20 started at once, for
 * the IMAGE_PROCESSING_CONCURRENCY given (default 2), one process per figure so none inherits another's heap. Memory is the process's RssAnon
 * (/proc/self/status: its own memory, not the mapped files VmRSS also counts), sampled every 5 ms.
 * `npm run build && node --expose-gc dist/bench/images-memory.bench.js [CONCURRENCY]`. A measurement, not a test.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { ImageProcessor } from '../src/storage/image-processor.js';
import { LocalImageStorage } from '../src/storage/local-image-storage.js';

function rssAnonMiB(): number {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('RssAnon:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

/** A photo-like JPEG of about 3 MB: noise over a gradient, 3000×2000, quality 98. */
async function photo(): Promise<Buffer> {
  const width = 3000;
  const height = 2000;
  const pixels = Buffer.alloc(width * height * 3);
  for (let i = 0; i < pixels.length; i++) pixels[i] = ((i % (width * 3)) / 12 + ((i * 2654435761) >>> 27)) & 255;
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 98 })
    .toBuffer();
}

async function* once(data: Buffer): AsyncGenerator<Uint8Array> {
  yield data;
}

const rules = { maxWidth: 1200, maxHeight: 800, cropAspect: true, thumbnail: { width: 200, height: 200 }, cropThumbnail: true };
const dir = mkdtempSync(path.join(os.tmpdir(), 'cms-images-bench-'));
try {
  const storage = new LocalImageStorage(dir);
  const input = await photo();
  console.log(
    `photo: ${(input.length / 1024 / 1024).toFixed(2)} MiB, 3000×2000; ${os.cpus().length} CPUs; sharp ${sharp.versions.sharp}, libvips ${sharp.versions.vips}`,
  );
  for (const concurrency of [Number(process.argv[2] ?? 2)]) {
    const processor = new ImageProcessor({ concurrency, maxPixels: 50_000_000 });
    // The 20 uploads are staged first, as the multipart reader does before the write processes them.
    const staged = await Promise.all(Array.from({ length: 20 }, () => storage.stage(once(input))));
    globalThis.gc?.();
    const before = rssAnonMiB();
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssAnonMiB());
    }, 5);
    const started = performance.now();
    await Promise.all(
      staged.map(async (s) => {
        const made = await processor.process(() => storage.readStaged(s), 'image/jpeg', rules, 'bench');
        await storage.discard(s);
        const full = await storage.stage(once(made.full.data));
        await storage.discard(full);
      }),
    );
    clearInterval(sampler);
    peak = Math.max(peak, rssAnonMiB());
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `concurrency ${String(concurrency).padStart(2)}: RssAnon before ${before.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB (+${(peak - before).toFixed(0)}), 20 uploads in ${seconds.toFixed(1)} s`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
