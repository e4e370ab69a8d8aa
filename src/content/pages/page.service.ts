import type { Static } from 'typebox';
import type { DbHandle } from '../../db/schema.js';
import { now } from '../../db/time.js';
import { inTransaction } from '../../db/transaction.js';
import { BadRequestError, ConflictError, ValidationError } from '../../errors.js';
import type { Precondition } from '../../http/representation.js';
import type { MaybePromise } from '../../maybe-async.js';
import type { ActorRef, ChangeLog } from '../history/change-log.js';
import { countBlogsOnPage } from '../shared/content.queries.js';
import type { Listed, Saved } from '../shared/envelope.js';
import { lockImageReferences } from '../shared/image-references.js';
import { listWindow, queryBoolean } from '../shared/schemas.js';
import { pageSearchText } from '../shared/search-text.js';
import { slugify } from '../shared/slug.js';
import type { StoredItem, StoredRecord } from '../shared/stored.js';
import { listStored } from '../shared/stored-lists.js';
import { findForWrite, getRecord, getStored } from '../shared/stored-records.js';
import { deleteLogAndQueue, restoreLogAndQueue, storeLogAndQueue } from '../shared/stored-writes.js';
import { PAGE_ALIAS, uniqueName } from '../shared/unique-name.js';
import { PAGE_FIELDS, PAGE_SYSTEM_FIELDS, type PageField } from './page.fields.js';
import { type PageRecord, pageRowOf, toPageRecord } from './page.record.js';
import * as repo from './page.repository.js';
import { PAGES } from './page.repository.js';
import type { PageQuery, PageWrite } from './page.schemas.js';
import type { PageRow } from './page.table.js';

export type { PageRecord } from './page.record.js';

/** A POST body as the route schema validated it. */
export type PageInput = Static<typeof PageWrite>;
/** A list's query string as the route schema validated it (and coerced its numbers). */
export type PageListQuery = Static<typeof PageQuery>;

const BOOL_FIELDS = (Object.keys(PAGE_FIELDS) as PageField[]).filter((f) => PAGE_FIELDS[f].kind === 'bool');
const WRITABLE_FIELDS = (Object.keys(PAGE_FIELDS) as PageField[]).filter((f) => !(PAGE_SYSTEM_FIELDS as readonly string[]).includes(f));

/** A list of stored records: the route joins their texts, the list's ETag comes from their tags. */
export async function listPages(db: DbHandle, siteId: number, query: PageListQuery): Promise<Listed<StoredItem>> {
  const window = listWindow(query);
  const { parent, page_parent } = query;
  const filter = {
    ...query,
    // parent and page_parent are synonyms; two different values can match nothing.
    parent: parent !== undefined && page_parent !== undefined && parent !== page_parent ? -1 : (parent ?? page_parent),
    publicContentOnly: queryBoolean(query.publicContentOnly),
  };
  return listStored(db, PAGES, siteId, filter, window, query);
}

/** One page as stored: its JSON text and ETag; at once when the read is (preparedLookup). */
export function getStoredPage(db: DbHandle, siteId: number, id: number): MaybePromise<StoredRecord> {
  return getStored(db, PAGES, siteId, id);
}

/** One page as an object (MCP, the console): the stored text, parsed. */
export async function getPage(db: DbHandle, siteId: number, id: number): Promise<PageRecord> {
  return getRecord(db, PAGES, siteId, id);
}

/** Field values as stored: booleans as 1/0, template letters in upper case. */
function storedChanges(input: PageInput): Partial<Record<PageField, string | number>> {
  const changes: Partial<Record<PageField, string | number>> = {};
  for (const field of WRITABLE_FIELDS) {
    const value = input[field];
    if (value === undefined) continue;
    if (BOOL_FIELDS.includes(field)) changes[field] = value === true || value === 1 ? 1 : 0;
    else if (field === 'page_alttemplate') changes[field] = String(value).toUpperCase();
    else changes[field] = value as string | number;
  }
  return changes;
}

async function checkParent(db: DbHandle, siteId: number, parent: number, self: number | undefined): Promise<void> {
  if (parent === 0) return;
  if (parent === self)
    throw new ValidationError([{ field: 'page_parent', message: 'cannot be the page itself: name another page, or 0 for the top level' }]);
  const chain = await repo.ancestryOf(db, siteId, parent);
  if (chain.length === 0) {
    throw new ValidationError([
      {
        field: 'page_parent',
        message: `there is no page ${parent} on this website: name one of its pages (GET /api/page lists them), or 0 for the top level`,
      },
    ]);
  }
  if (self !== undefined && chain.includes(self)) {
    throw new ValidationError([
      {
        field: 'page_parent',
        message: `page ${parent} is below page ${self}, so this would make a cycle: choose a parent that is not below it, or move page ${parent} first`,
      },
    ]);
  }
}

function uniqueAlias(db: DbHandle, siteId: number, wanted: string, self?: number): Promise<string> {
  return uniqueName(db, PAGE_ALIAS, siteId, wanted, self);
}

/**
 * POST: insert without `id`, update with it, as `actor`: the row written, the record stored, the
 * change logged and its webhook deliveries queued (`changeLog`). Returns the saved record.
 */
export async function savePage(
  db: DbHandle,
  changeLog: ChangeLog,
  siteId: number,
  input: PageInput,
  actor: ActorRef,
  precondition?: Precondition,
): Promise<Saved<PageRecord>> {
  if (input.id !== undefined && input.page !== undefined && input.page !== input.id) {
    throw new BadRequestError(
      `The body names two pages: id ${input.id} and page ${input.page}. Send the page to update in one of them, or both with the same number.`,
    );
  }
  const changes = storedChanges(input);
  const at = now();
  return inTransaction(db, async (tx) => {
    // A page's image fields and HTML refer to images: no clean-up may remove one this write names.
    await lockImageReferences(tx, 'shared');
    // A parent given, on an insert or an update, is checked against the tree as it is now.
    if (changes.page_parent !== undefined) await repo.lockPageTree(tx, siteId);
    if (input.id === undefined) {
      precondition?.(undefined);
      return { ...(await insert(tx, changeLog, siteId, changes, at, actor)), created: true };
    }
    return { ...(await update(tx, changeLog, siteId, input.id, changes, at, actor, precondition)), created: false };
  });
}

async function insert(
  db: DbHandle,
  changeLog: ChangeLog,
  siteId: number,
  changes: Partial<Record<PageField, string | number>>,
  at: string,
  actor: ActorRef,
) {
  if (changes.page_parent !== undefined) await checkParent(db, siteId, Number(changes.page_parent), undefined);
  // A page is named by its title or its menu text; one with neither is nothing anybody could find.
  const named = (field: PageField) => typeof changes[field] === 'string' && String(changes[field]).trim() !== '';
  if (!named('page_usertitle') && !named('page_menuname')) {
    throw new ValidationError([
      { field: 'page_usertitle', message: 'is required on a new page, unless page_menuname is given: a page needs a title or a menu text' },
    ]);
  }
  const blank = Object.fromEntries(WRITABLE_FIELDS.map((f) => [f, PAGE_FIELDS[f].kind === 'text' ? '' : 0])) as Record<
    PageField,
    string | number
  >;
  const row = { ...blank, ...changes, page_dt_begin: at, page_lastmodified: at } as Omit<PageRow, 'page'>;
  if (!row.page_alias) {
    row.page_alias = await uniqueAlias(db, siteId, slugify(row.page_usertitle || row.page_menuname, 'page'));
  }
  const id = await repo.insertPage(db, { ...row, site_id: siteId, search_text: pageSearchText(row) });
  return storeLogAndQueue(db, changeLog, PAGES, siteId, id, 'create', actor);
}

async function update(
  db: DbHandle,
  changeLog: ChangeLog,
  siteId: number,
  id: number,
  changes: Partial<Record<PageField, string | number>>,
  at: string,
  actor: ActorRef,
  precondition?: Precondition,
) {
  const currentRow = await findForWrite(db, PAGES, siteId, id, precondition);
  if (changes.page_parent !== undefined && changes.page_parent !== currentRow.page_parent) {
    await checkParent(db, siteId, Number(changes.page_parent), id);
  }
  if (changes.page_alias === '') {
    changes.page_alias = await uniqueAlias(db, siteId, slugify(String(changes.page_usertitle ?? currentRow.page_usertitle), 'page'), id);
  }
  // Only a real change is written: a repeated request leaves the page, page_lastmodified included, as it was.
  if ((Object.keys(changes) as PageField[]).every((field) => currentRow[field] === changes[field])) {
    return { record: toPageRecord(currentRow), etag: currentRow.etag };
  }
  const merged = { ...currentRow, ...changes } as PageRow;
  await repo.updatePage(db, siteId, id, {
    ...(changes as repo.PageChanges),
    page_lastmodified: at,
    search_text: pageSearchText(merged),
  });
  return storeLogAndQueue(db, changeLog, PAGES, siteId, id, 'update', actor);
}

/**
 * Makes `record` (a revision of page `id`) the page's content again, as `actor`: the page is
 * updated, or inserted again under its id when it was deleted. Its parent must still exist (409
 * naming it) and may not have come to be below it; its alias must still be free (409).
 */
export async function restorePage(
  db: DbHandle,
  changeLog: ChangeLog,
  siteId: number,
  id: number,
  record: PageRecord,
  actor: ActorRef,
  precondition?: Precondition,
): Promise<Saved<PageRecord>> {
  return inTransaction(db, async (tx) => {
    // The locks in the order every page write takes them: images, the tree, then the row.
    await lockImageReferences(tx, 'shared');
    await repo.lockPageTree(tx, siteId);
    return restoreLogAndQueue(tx, changeLog, PAGES, siteId, id, actor, precondition, (trx, current) =>
      restoreColumns(trx, siteId, id, record, current),
    );
  });
}

/** restorePage's write: the revision's columns in place, once its parent is known to still hold it. */
async function restoreColumns(tx: DbHandle, siteId: number, id: number, record: PageRecord, current: PageRow | undefined): Promise<void> {
  const { page: _id, ...row } = pageRowOf(record);
  const parent = row.page_parent;
  if (parent !== 0) {
    const chain = await repo.ancestryOf(tx, siteId, parent);
    if (chain.length === 0) throw new ConflictError(`Page ${id}'s parent, page ${parent}, no longer exists: restore or recreate it first.`);
    if (chain.includes(id)) throw new ConflictError(`Page ${id}'s parent, page ${parent}, is now below it: move it first.`);
  }
  const columns = { ...row, page_lastmodified: now(), search_text: pageSearchText(row) };
  if (current) await repo.updatePage(tx, siteId, id, columns);
  else await repo.insertPage(tx, { ...columns, page: id, site_id: siteId });
}

/** DELETE: only a page without sub pages and without blogs. */
export async function deletePage(
  db: DbHandle,
  changeLog: ChangeLog,
  siteId: number,
  id: number,
  actor: ActorRef,
  precondition?: Precondition,
): Promise<void> {
  await inTransaction(db, async (trx) => {
    // No page may be put under this one while it is checked for sub pages and deleted.
    await repo.lockPageTree(trx, siteId);
    const row = await findForWrite(trx, PAGES, siteId, id, precondition);
    const children = await repo.countChildren(trx, siteId, id);
    if (children > 0) {
      throw new ConflictError(`Page ${id} still has ${children} sub page(s); move or delete them first.`);
    }
    const blogs = await countBlogsOnPage(trx, siteId, id);
    if (blogs > 0) {
      throw new ConflictError(`Page ${id} still holds ${blogs} blog(s); move or delete them first.`);
    }
    await deleteLogAndQueue(trx, changeLog, PAGES, siteId, id, row, actor);
  });
}

export interface PageNode {
  id: number;
  title: string;
  alias: string;
  privacy: number;
  children: PageNode[];
}

/**
 * The website's pages as a tree, in menu order. A page whose parent does not exist (or that sits
 * in a cycle) is shown at the top level rather than lost.
 */
export async function pageTree(db: DbHandle, siteId: number): Promise<PageNode[]> {
  const rows = await repo.pageOutline(db, siteId);
  const nodes = new Map<number, PageNode>();
  for (const row of rows) {
    nodes.set(row.page, {
      id: row.page,
      title: row.page_usertitle || row.page_menuname || `Page ${row.page}`,
      alias: row.page_alias,
      privacy: row.page_privacy,
      children: [],
    });
  }
  const parentOf = new Map(rows.map((row) => [row.page, row.page_parent]));
  // Whether `id` is among the ancestors of `start`: a cycle in the data.
  const inCycle = (id: number, start: number) => {
    const seen = new Set<number>();
    for (let at: number | undefined = start; at !== undefined && !seen.has(at); at = parentOf.get(at)) {
      if (at === id) return true;
      seen.add(at);
    }
    return false;
  };
  const roots: PageNode[] = [];
  for (const row of rows) {
    const node = nodes.get(row.page)!;
    const parent = nodes.get(row.page_parent);
    if (parent && !inCycle(node.id, row.page_parent)) parent.children.push(node);
    else roots.push(node);
  }
  return roots;
}
