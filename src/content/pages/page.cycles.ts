/**
 * Finding and breaking cycles in page trees. Every move checks the tree under the website's tree
 * lock, so none can be made now; a database written before that lock (two nodes moving A under B
 * and B under A at once) may hold some. Each start looks for them, and `cms doctor` does on demand.
 */
import type { DbHandle } from '../../db/schema.js';
import type { ActorRef, ChangeLog } from '../history/change-log.js';
import { ancestryOf } from './page.repository.js';
import { savePage } from './page.service.js';

export interface CycleRepair {
  readonly siteId: number;
  /** The pages of the cycle from `page` on, each the parent of the one before it. */
  readonly cycle: readonly number[];
  /** The page whose move closed the cycle: the latest move of its pages. */
  readonly page: number;
  readonly parentWas: number;
  /** Where it went: its parent before that move, when that still holds it without a cycle; otherwise the top level. */
  readonly parentNow: number;
}

/** Every cycle of parents in every website's page tree, each once, as its pages in parent order. */
export async function findPageCycles(db: DbHandle): Promise<{ siteId: number; cycle: number[] }[]> {
  const rows = await db.selectFrom('pages').select(['site_id', 'page', 'page_parent']).where('page_parent', '<>', 0).execute();
  const parentOf = new Map(rows.map((r) => [r.page, r]));
  const done = new Set<number>();
  const cycles: { siteId: number; cycle: number[] }[] = [];
  for (const row of rows) {
    // Walk up from each page not yet seen; a page met twice on one walk closes a cycle.
    const path: number[] = [];
    const onPath = new Set<number>();
    let at: number | undefined = row.page;
    while (at !== undefined && !done.has(at) && !onPath.has(at)) {
      path.push(at);
      onPath.add(at);
      const parent = parentOf.get(at);
      at = parent && parent.site_id === row.site_id ? parent.page_parent : undefined;
    }
    if (at !== undefined && onPath.has(at)) cycles.push({ siteId: row.site_id, cycle: path.slice(path.indexOf(at)) });
    for (const page of path) done.add(page);
  }
  return cycles;
}

/** When page `id` was moved to its current parent: the change-log number of the revision that set it (0 when the log has none). */
async function movedAt(db: DbHandle, siteId: number, id: number): Promise<{ seq: number; parentBefore: number }> {
  const revisions = await db
    .selectFrom('content_changes')
    .select(['seq', 'record_json'])
    .where('site_id', '=', siteId)
    .where('type', '=', 'page')
    .where('record_id', '=', id)
    .orderBy('revision', 'desc')
    .execute();
  const parents = revisions.map((r) => ({ seq: r.seq, parent: (JSON.parse(r.record_json) as { page_parent: number }).page_parent }));
  const current = parents[0]?.parent;
  let index = 0;
  while (index + 1 < parents.length && parents[index + 1]!.parent === current) index++;
  return { seq: parents[index]?.seq ?? 0, parentBefore: parents[index + 1]?.parent ?? 0 };
}

/**
 * Breaks every cycle at its latest move: the page of the cycle that was moved to its parent last
 * goes back to its parent before that move, or to the top level when that page is gone or would
 * close a cycle again. Each move is an ordinary page write, as `actor`, so it has a revision, a
 * change in the feed and its webhooks.
 */
export async function repairPageCycles(db: DbHandle, changeLog: ChangeLog, actor: ActorRef): Promise<CycleRepair[]> {
  const repairs: CycleRepair[] = [];
  for (const { siteId, cycle } of await findPageCycles(db)) {
    const moves = await Promise.all(cycle.map(async (page) => ({ page, ...(await movedAt(db, siteId, page)) })));
    const latest = moves.reduce((a, b) => (b.seq > a.seq || (b.seq === a.seq && b.page > a.page) ? b : a));
    const ancestry = latest.parentBefore === 0 ? [] : await ancestryOf(db, siteId, latest.parentBefore);
    const parentNow = ancestry.length > 0 && !ancestry.some((page) => cycle.includes(page)) ? latest.parentBefore : 0;
    // Told from the page that is moved: each the parent of the one before.
    const from = cycle.indexOf(latest.page);
    const told = [...cycle.slice(from), ...cycle.slice(0, from)];
    await savePage(db, changeLog, siteId, { id: latest.page, page_parent: parentNow }, actor);
    repairs.push({ siteId, cycle: told, page: latest.page, parentWas: told[1]!, parentNow });
  }
  return repairs;
}
