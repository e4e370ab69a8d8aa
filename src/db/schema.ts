import type { Generated } from 'kysely';
import type { BlogImagesTable, BlogsTable } from '../content/blogs/blog.table.js';
import type { PAGE_FIELDS } from '../content/pages/page.fields.js';
import type { RowOf } from '../content/shared/fields.js';
import type { OAuthTables } from '../oauth/oauth.tables.js';

/** Timestamps are stored as text `YYYY-MM-DD HH:MM:SS` (UTC) on both databases. */
export type Timestamp = string;

export interface SitesTable {
  id: Generated<number>;
  name: string;
  created_at: Timestamp;
}

export interface UsersTable {
  id: Generated<number>;
  /** Lower-cased; unique. */
  email: string;
  password_hash: string;
  created_at: Timestamp;
}

export interface SiteUsersTable {
  site_id: number;
  user_id: number;
  role: 'owner' | 'admin';
}

export interface ApiCredentialsTable {
  /** The public half, sent as the Basic user name or X-Api-Id. */
  api_id: string;
  site_id: number;
  label: string;
  /** SHA-256 of the key: the key is 256 random bits, so a fast hash is enough. */
  key_hash: string;
  created_at: Timestamp;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export type PagesTable = Omit<RowOf<typeof PAGE_FIELDS>, 'page'> & {
  page: Generated<number>;
  site_id: number;
  /** Plain text the full-text index is built from (titles, summary, keywords, HTML without tags). */
  search_text: string;
};

export interface Database extends OAuthTables {
  sites: SitesTable;
  users: UsersTable;
  site_users: SiteUsersTable;
  api_credentials: ApiCredentialsTable;
  pages: PagesTable;
  blogs: BlogsTable;
  blog_images: BlogImagesTable;
}
