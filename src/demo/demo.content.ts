/**
 * The sample page tree of the demo website: small, but it shows each thing a client meets in a
 * real site: nesting, a member-only branch (hidden by publicContentOnly) and a page holding blogs.
 */
export interface DemoPage {
  /** Stable name the seeder uses to find a page again (the blog page, for seedDemoBlogs). */
  readonly key: string;
  readonly title: string;
  readonly summary: string;
  readonly html: string;
  /** Minimum member level to view; 0 is public. */
  readonly privacy?: number;
  readonly children?: readonly DemoPage[];
}

export const DEMO_SITE_NAME = 'Demo Website';

export const DEMO_PAGES: readonly DemoPage[] = [
  {
    key: 'home',
    title: 'Home',
    summary: 'Welcome to the demo website.',
    html: '<p>Welcome! This website was created on the first start so that the API has something to show.</p>',
  },
  {
    key: 'about',
    title: 'About us',
    summary: 'Who we are and how we started.',
    html: '<p>We are a small team that builds websites for clubs and shops.</p>',
    children: [
      {
        key: 'team',
        title: 'Our team',
        summary: 'The people behind the website.',
        html: '<p>Ada writes, Linus designs, Grace keeps everything running.</p>',
      },
      {
        key: 'history',
        title: 'History',
        summary: 'From a garage to the web.',
        html: '<p>Founded in 2009 in a garage, online since 2010.</p>',
      },
    ],
  },
  {
    key: 'members',
    title: 'Members',
    summary: 'Only for logged-in members.',
    html: '<p>News and documents for our members.</p>',
    privacy: 1,
    children: [
      {
        key: 'member-news',
        title: 'Member news',
        summary: 'Announcements for members.',
        html: '<p>The annual meeting is on the first Monday of March.</p>',
      },
    ],
  },
  {
    key: 'blog',
    title: 'Blog',
    summary: 'Articles and news.',
    html: '<p>Our latest articles.</p>',
  },
];
