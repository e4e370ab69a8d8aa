import type { Kysely } from 'kysely';
import type { ApiCredentialsTable, SitesTable, SiteUsersTable, UsersTable } from '../accounts/account.table.js';
import type { BlogImagesTable, BlogsTable, ImageOwnersTable } from '../content/blogs/blog.table.js';
import type { ChangeCountersTable, ContentChangesTable } from '../content/history/history.table.js';
import type { PagesTable } from '../content/pages/page.table.js';
import type { ContentTotalsTable } from '../content/shared/content-totals.table.js';
import type { OAuthTables } from '../oauth/oauth.tables.js';
import type { ImageChunksTable, ImagesTable, ImageVariantsTable } from '../storage/image.table.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhooksTable } from '../webhooks/webhook.table.js';

/** Every table, gathered from the features that own them (each `*.table.ts` sits beside its feature). */
export interface Database extends OAuthTables {
  sites: SitesTable;
  users: UsersTable;
  site_users: SiteUsersTable;
  api_credentials: ApiCredentialsTable;
  pages: PagesTable;
  blogs: BlogsTable;
  blog_images: BlogImagesTable;
  images: ImagesTable;
  image_chunks: ImageChunksTable;
  image_variants: ImageVariantsTable;
  image_owners: ImageOwnersTable;
  content_totals: ContentTotalsTable;
  change_counters: ChangeCountersTable;
  content_changes: ContentChangesTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}

/**
 * The one way in: every repository and service takes a DbHandle as its first argument. Inside a
 * transaction it is the transaction's handle, so a caller's transaction passes straight through
 * (see inTransaction). The dialect comes from the handle itself (dialectOf).
 */
export type DbHandle = Kysely<Database>;
