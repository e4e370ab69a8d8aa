import { createCredential, createSite, createUser } from '../accounts/account.service.js';
import { randomToken } from '../accounts/secrets.js';
import type { Config } from '../config.js';
import { type ChangeLog, SYSTEM_ACTOR } from '../content/history/change-log.js';
import { savePage } from '../content/pages/page.service.js';
import type { DbHandle } from '../db/schema.js';
import { inTransaction, lockInTransaction } from '../db/transaction.js';
import { createDemoClient, demoRedirectUris } from '../oauth/clients/client.service.js';
import { seedDemoBlogs } from './blogs.seed.js';
import { type DemoCredentials, writeCredentialsFile } from './credentials.js';
import { DEMO_PAGES, DEMO_SITE_NAME, type DemoPage } from './demo.content.js';

export const DEMO_OWNER_EMAIL = 'owner@demo.example';

interface SeedOptions {
  /** The owner's password; a random one when absent (DEMO_PASSWORD). */
  password?: string | undefined;
}

/** Arbitrary class id for pg_advisory_xact_lock(class, 0): nodes starting together seed once. */
const SEED_LOCK_CLASS = 7302;

/**
 * On a database without websites, creates the demo website, its pages and articles, an owner,
 * an API credential and the demo OAuth client, all in one transaction, and writes the credentials file. Returns undefined (and
 * creates nothing) when any website exists already. The pages and articles are written through
 * their services, so each is logged in `changeLog` like any write.
 */
export async function seedDemo(
  db: DbHandle,
  changeLog: ChangeLog,
  config: Config,
  options: SeedOptions = {},
): Promise<DemoCredentials | undefined> {
  return inTransaction(db, async (tx) => {
    await lockInTransaction(tx, SEED_LOCK_CLASS, 0);
    // Checked inside the transaction (and lock), so a concurrent start sees the committed demo.
    const anySite = await tx.selectFrom('sites').select('id').limit(1).executeTakeFirst();
    if (anySite) return undefined;

    const site = await createSite(tx, DEMO_SITE_NAME);
    const pageIds = await createPages(tx, changeLog, site.id, DEMO_PAGES, 0);
    // Articles on the Blog page, through the blog service, in this same transaction.
    await seedDemoBlogs(tx, changeLog, site.id, pageIds.get('blog')!);

    const password = options.password ?? randomToken(12);
    await createUser(tx, { email: DEMO_OWNER_EMAIL, password, siteId: site.id, role: 'owner' });
    const credential = await createCredential(tx, site.id, 'demo');
    const oauthClient = await createDemoClient(tx, demoRedirectUris(config.publicUrl));
    const credentials: DemoCredentials = {
      url: config.publicUrl,
      siteId: site.id,
      siteName: site.name,
      owner: { email: DEMO_OWNER_EMAIL, password },
      apiId: credential.apiId,
      apiKey: credential.apiKey,
      curl: `curl -u ${credential.apiId}:${credential.apiKey} ${config.publicUrl}/api/page`,
      oauthClient,
    };
    // Written before the commit: the key exists nowhere else, so a failed write must undo the seed.
    await writeCredentialsFile(config, credentials);
    return credentials;
  });
}

/** Creates `tree` under `parent` through the page service; returns the page id of every key. */
async function createPages(
  db: DbHandle,
  changeLog: ChangeLog,
  siteId: number,
  tree: readonly DemoPage[],
  parent: number,
  ids = new Map<string, number>(),
) {
  for (const [index, page] of tree.entries()) {
    const { record } = await savePage(
      db,
      changeLog,
      siteId,
      {
        page_usertitle: page.title,
        page_menuname: page.title,
        page_parent: parent,
        page_order: index + 1,
        page_issubmenu: page.children?.length ?? 0,
        page_summary: page.summary,
        page_html_content: page.html,
        page_privacy: page.privacy ?? 0,
      },
      SYSTEM_ACTOR,
    );
    ids.set(page.key, record.page);
    if (page.children) await createPages(db, changeLog, siteId, page.children, record.page, ids);
  }
  return ids;
}
