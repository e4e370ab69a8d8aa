import { type BlogInput, type BlogRecord, saveBlog } from '../content/blogs/blog.service.js';
import { type ChangeLog, SYSTEM_ACTOR } from '../content/history/change-log.js';
import type { DbHandle } from '../db/schema.js';
import { formatTimestamp } from '../db/time.js';
import type { ImageStorage } from '../storage/image-storage.js';

/** Demo articles carry no uploads, so the seed needs no image storage; using one is a bug. */
const NO_IMAGES: ImageStorage = new Proxy({} as ImageStorage, {
  get: (_target, method) => () => Promise.reject(new Error(`demo blogs have no image files (ImageStorage.${String(method)})`)),
});

function daysFromToday(days: number): string {
  return formatTimestamp(new Date(Date.now() + days * 86_400_000)).slice(0, 10);
}

/**
 * A handful of articles on the demo "Blog" page: three published in the past, one hidden
 * (info_show N) and one held back by a hide-until date a month ahead, so publicContentOnly has
 * something to leave out. Dates are relative to today, so the demo never goes stale.
 */
export async function seedDemoBlogs(db: DbHandle, changeLog: ChangeLog, siteId: number, blogPageId: number): Promise<BlogRecord[]> {
  const articles: BlogInput[] = [
    {
      info_title: 'Welcome to our new blog',
      info_date: daysFromToday(-30),
      info_summary: 'News, recipes and stories from the bakery, every week.',
      info_fulltext: '<p>Welcome! Here we share <strong>news</strong>, recipes and stories from the bakery.</p>',
      info_tags: 'news',
    },
    {
      info_title: 'Five tips for better sourdough',
      info_date: daysFromToday(-14),
      info_summary: 'Feed your starter, be patient, and bake hot.',
      info_fulltext:
        '<h2>1. Feed the starter</h2><p>A lively levain makes a lighter loaf.</p><h2>2. Be patient</h2><p>Long, cool proofs build flavour.</p>',
      info_tags: 'baking, bread, recipes',
      info_metatitle: 'Sourdough tips from our bakers',
      info_blog_comments_on: true,
    },
    {
      info_title: 'Behind the scenes: our kitchen',
      info_date: daysFromToday(-7),
      info_summary: 'Meet the team that starts baking at four in the morning.',
      info_fulltext: '<p>Our day starts at 4 am, when the ovens warm up.</p>',
      info_tags: 'team, news',
      info_location: '1 Market Street, Springfield',
    },
    {
      info_title: 'Draft: autumn menu',
      info_show: 'N',
      info_date: daysFromToday(-2),
      info_summary: 'Not published yet: pumpkin, apple and spice.',
      info_fulltext: '<p>Work in progress.</p>',
      info_tags: 'menu',
    },
    {
      info_title: 'Holiday opening hours',
      info_date: daysFromToday(-1),
      info_hideuntil: daysFromToday(30),
      info_summary: 'Shown from a month ahead: when we open over the holidays.',
      info_fulltext: '<p>We are open every day except the 25th.</p>',
      info_tags: 'news, hours',
    },
  ];
  const saved: BlogRecord[] = [];
  for (const article of articles) {
    const { record } = await saveBlog({ db, changeLog, images: NO_IMAGES }, siteId, { page: blogPageId, ...article }, SYSTEM_ACTOR);
    saved.push(record);
  }
  return saved;
}
