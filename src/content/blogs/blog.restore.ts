/**
 * A revision of a blog made its content again, as the revisions and undo services (content/history) ask:
 * the one blog write that starts from a stored record rather than from input.
 */
import type { DbHandle } from '../../db/schema.js';
import { now } from '../../db/time.js';
import { ConflictError } from '../../errors.js';
import type { Precondition } from '../../http/representation.js';
import type { ActorRef, ChangeLog } from '../history/change-log.js';
import { pageExists } from '../shared/content.queries.js';
import type { Saved } from '../shared/envelope.js';
import { blogSearchText } from '../shared/search-text.js';
import { restoreLogAndQueue } from '../shared/stored-writes.js';
import { type BlogRecord, blogRowOf } from './blog.record.js';
import * as repo from './blog.repository.js';
import { BLOGS } from './blog.repository.js';

/**
 * Makes `record` (a revision of blog `id`) the blog's content again, as `actor`: the blog is
 * updated, or inserted again under its id when it was deleted. Its page must still exist (409).
 * The images it shows are still stored: a kept revision's images are never removed. Of the
 * upload rows that migrateMode recognises originals by, those of the images it still shows stay.
 */
export async function restoreBlog(
  db: DbHandle,
  changeLog: ChangeLog,
  siteId: number,
  id: number,
  record: BlogRecord,
  actor: ActorRef,
  precondition?: Precondition,
): Promise<Saved<BlogRecord>> {
  return restoreLogAndQueue(db, changeLog, BLOGS, siteId, id, actor, precondition, async (tx, current) => {
    const { info_id: _id, ...row } = blogRowOf(record);
    if (!(await pageExists(tx, siteId, row.page))) {
      throw new ConflictError(`Blog ${id}'s page, page ${row.page}, no longer exists: restore it first, or move the blog after restoring.`);
    }
    const columns = { ...row, cid: siteId, info_timestamp: now(), search_text: blogSearchText(row) };
    if (current) {
      await repo.updateBlog(tx, siteId, id, columns);
      const shown = new Set([record.info_img, ...record.info_more_images]);
      const rows = await repo.listBlogImages(tx, siteId, id);
      await repo.replaceBlogImages(
        tx,
        siteId,
        id,
        rows.filter((r) => shown.has(r.path)),
      );
    } else {
      await repo.insertBlog(tx, { ...columns, info_id: id, site_id: siteId });
    }
  });
}
