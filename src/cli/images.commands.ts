import { reprocessImages } from '../content/blogs/blog.reprocess.js';
import { configuredStorage } from '../storage/configured-storage.js';
import { ImageProcessor } from '../storage/image-processor.js';
import { type Command, type CommandContext, optionalOption, UsageError } from './command.js';

function idOption(ctx: CommandContext, name: string): number | undefined {
  const raw = optionalOption(ctx, name);
  if (raw === undefined) return undefined;
  if (!/^[1-9]\d{0,14}$/.test(raw)) throw new UsageError(`--${name} must be an id (a positive whole number), got "${raw}"`);
  return Number(raw);
}

const imagesReprocess: Command = {
  name: 'images reprocess',
  summary: "Remake stored blog images under their page's image rules of today (resumable; Ctrl-C stops after the current image)",
  usage: '[--site ID] [--page ID]',
  options: { site: { type: 'string' }, page: { type: 'string' } },
  async run(ctx) {
    const siteId = idOption(ctx, 'site');
    const page = idOption(ctx, 'page');
    const config = ctx.config();
    const db = (await ctx.db()).kysely;
    const images = configuredStorage(config, db);
    const processor = new ImageProcessor({ concurrency: config.imageProcessing.concurrency, maxPixels: config.uploads.maxPixels });
    // An interrupt finishes the image in hand: each is switched in its own transaction.
    const stop = new AbortController();
    const interrupt = () => stop.abort();
    process.once('SIGINT', interrupt);
    process.once('SIGTERM', interrupt);
    try {
      const result = await reprocessImages(
        { db, changeLog: await ctx.changeLog(), images, processor },
        { siteId, page, signal: stop.signal },
      );
      const text = `${result.remade} image(s) remade, ${result.skipped} skipped (gone or no longer shown)${
        result.interrupted ? '; interrupted: run again to go on' : '; every image follows its page’s rules'
      }.`;
      return { json: result, text };
    } finally {
      process.off('SIGINT', interrupt);
      process.off('SIGTERM', interrupt);
    }
  },
};

export const imageCommands: readonly Command[] = [imagesReprocess];
