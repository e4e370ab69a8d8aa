/**
 * The content operations MCP offers as tools: each names its REST route, says what it does in
 * words written for agents, and runs on the services as that route does. content.tools.ts builds
 * the tools from these and the routes' schemas.
 */
import { BLOG_SYSTEM_FIELDS, type BlogField } from '../content/blogs/blog.fields.js';
import * as blogs from '../content/blogs/blog.service.js';
import type { ActorRef, ChangeLog, RecordType } from '../content/history/change-log.js';
import { type ChangeEntry, readFeed, sinceOf } from '../content/history/feed.service.js';
import { listRevisions, restoreRevision } from '../content/history/revisions.service.js';
import { PAGE_SYSTEM_FIELDS, type PageField } from '../content/pages/page.fields.js';
import * as pages from '../content/pages/page.service.js';
import { type Listed, listMeta } from '../content/shared/envelope.js';
import { DEFAULT_PAGE_SIZE } from '../content/shared/schemas.js';
import { parsedRecords, type StoredItem } from '../content/shared/stored.js';
import type { DbHandle } from '../db/schema.js';
import type { ImageStorage } from '../storage/image-storage.js';

export interface ToolDeps {
  readonly db: DbHandle;
  readonly changeLog: ChangeLog;
  readonly images: ImageStorage;
  readonly warn: (message: string, error: unknown) => void;
}

export type Input = Record<string, unknown>;
/** A tool's work for the caller's website; `actor` is who its writes are recorded as (the MCP connection). */
export type Run = (deps: ToolDeps, siteId: number, input: Input, actor: ActorRef) => Promise<Record<string, unknown>>;

/** Which part of the REST request a tool's arguments stand for: it decides the schema and the validator. */
export type Part = 'querystring' | 'params' | 'body';

export interface Operation {
  readonly name: string;
  readonly method: 'GET' | 'POST' | 'DELETE';
  /**
   * The route. `{type}` stands for routes registered once per record type (page, blog) with the
   * same arguments: the tool is one for both, and takes the type as its `type` argument.
   */
  readonly endpoint: string;
  readonly part: Part;
  /** The title of a per-type tool: each route's summary names its own type. */
  readonly title?: string;
  /**
   * What an agent reads to choose the tool and build its call. Written for agents rather than
   * taken from the REST reference, which speaks of headers, status codes and media types a tool
   * call does not have; each argument has its own description in the schema.
   */
  readonly description: string;
  /** Argument descriptions that differ over MCP (its defaults, its field set). */
  readonly describe?: Readonly<Record<string, string>>;
  /** Arguments of the route that the tool does not take (its validator refuses them as unknown). */
  readonly without?: readonly string[];
  /** Arguments the tool takes as the route does but does not show: an agent has no use for them. */
  readonly hidden?: readonly string[];
  /** The tool's defaults where they differ from the route's. */
  readonly defaults?: Readonly<Record<string, unknown>>;
  /** Replaces a record's content as a delete removes it: annotated destructive. */
  readonly destructive?: true;
  readonly run: Run;
}

/** A tool result is an object, so the stored texts of a list are parsed (the REST route sends them as they are). */
const listed = (l: Listed<StoredItem>) => ({ data: parsedRecords(l.records), meta: listMeta(l) });
/** GET /<resource>/<id> answers one record in the list envelope. */
const one = (record: object) => ({ data: [record], meta: { total: 1, offset: 0, pageSize: DEFAULT_PAGE_SIZE } });
const saved = (s: { record: object }) => ({ data: [s.record] });
const id = (input: Input) => Number(input.id);
const recordType = (input: Input) => input.type as RecordType;

/** The record types of the per-type routes, in the order their descriptions are given. */
export const RECORD_TYPES = ['page', 'blog'] as const satisfies readonly RecordType[];

/** A revision as GET …/revisions lists it: the feed entry without the record it belongs to. */
const revisionOf = ({ revision, seq, op, at, actor }: ChangeEntry) => ({ revision, seq, op, at, actor });

/**
 * Over MCP a list answers fewer records and fields unless the arguments ask otherwise (pageSize,
 * fields, allFields): every record an agent lists costs it context, and a REST default list of 200
 * full records is several times its 25,000-token limit for a tool result. The default fields are
 * what an agent needs to pick a record (its title, its address, where it sits, whether it is
 * public or shown, when it changed) and then read it whole with get_*; no free text, which is
 * what made a record long.
 */
export const MCP_PAGE_SIZE = 20;
export const MCP_PAGE_FIELDS = [
  'page_usertitle',
  'page_alias',
  'page_parent',
  'page_privacy',
  'page_lastmodified',
] as const satisfies readonly PageField[];
export const MCP_BLOG_FIELDS = [
  'page',
  'info_title',
  'info_filename',
  'info_show',
  'info_date',
  'info_timestamp',
] as const satisfies readonly BlogField[];

/** A list tool's arguments with the MCP defaults filled in where the agent sent nothing. */
function smallList<Q extends { pageSize?: number | string; fields?: string; allFields?: string }>(
  input: Input,
  fields: readonly string[],
): Q {
  const query = { ...input } as Q;
  query.pageSize ??= MCP_PAGE_SIZE;
  if (query.fields === undefined && query.allFields === undefined) query.fields = fields.join(',');
  return query;
}

/** The arguments that choose a list tool's records and fields, as they work over MCP. */
const listArguments = (ids: string, fields: readonly string[]) => ({
  ...LIST_ARGUMENTS,
  pageSize: `Records per answer, 1 to 999; default ${MCP_PAGE_SIZE}.`,
  fields: `Comma-separated field names to return; ${ids} always come. Default: ${fields.join(',')}. Takes precedence over allFields.`,
  allFields: 'true: every field; false: all but the HTML bodies. Without this or fields: the default fields.',
});

/**
 * Other spellings of list arguments (`orderby` for orderBy, `tag` for tags; for pages `page_parent`
 * for parent and `page` for id) that the REST routes take for the hosted original's clients. Still taken, but not
 * shown: an agent has the schema, and each alias would cost every agent its description.
 */
const ALIASES = ['orderby', 'tag'];

/** Shorter texts of the list arguments whose REST descriptions explain what the tool's description says once. */
const LIST_ARGUMENTS = {
  matchType: 'How text filters compare; default like.',
  cursor: 'Cursor paging: "" for the first page, then meta.nextCursor; not with offset.',
  orderDirection: "asc or desc; reverse: the opposite of the order's default direction.",
};

const LIST_TEXT =
  'Filters combine (AND); text filters are case-insensitive patterns (% any text, _ one character; without either the whole value must match).';

/**
 * The MCP tools, one per REST operation on pages, blogs and their history (one for both types of
 * a per-type route). Each calls the service its route calls; its arguments' schema, their
 * descriptions and its scope are read from the registered route, its own description is here.
 */
export const OPERATIONS: readonly Operation[] = [
  {
    name: 'list_pages',
    method: 'GET',
    endpoint: '/api/page',
    part: 'querystring',
    description: `The website's pages in menu order (or orderBy), ${MCP_PAGE_SIZE} at a time, with a few fields each unless fields or allFields asks for more; get_page reads one whole. ${LIST_TEXT}`,
    describe: listArguments('page and id', MCP_PAGE_FIELDS),
    hidden: [...ALIASES, 'page_parent', 'page'],
    run: async (d, site, input) => listed(await pages.listPages(d.db, site, smallList(input, MCP_PAGE_FIELDS))),
  },
  {
    name: 'get_page',
    method: 'GET',
    endpoint: '/api/page/:id',
    part: 'params',
    description: 'One page by id, every field.',
    run: async (d, site, input) => one(await pages.getPage(d.db, site, id(input))),
  },
  {
    name: 'save_page',
    method: 'POST',
    endpoint: '/api/page',
    part: 'body',
    description:
      'Inserts a page (without id) or updates one (with id; fields left out stay as they are); answers the page as saved. page_parent must be 0 or a page of this website, and may not make a cycle. page_alias is generated from the title when absent, and kept unique.',
    // The fields the service sets: a record read may be sent back whole, so they are taken, and ignored.
    hidden: PAGE_SYSTEM_FIELDS,
    run: async (d, site, input, actor) => saved(await pages.savePage(d.db, d.changeLog, site, input as pages.PageInput, actor)),
  },
  {
    name: 'delete_page',
    method: 'DELETE',
    endpoint: '/api/page/:id',
    part: 'params',
    description: 'Deletes a page; refused (409) while it has sub pages or blogs. Answers {"deleted": id}; restore_revision brings it back.',
    run: async (d, site, input, actor) => {
      await pages.deletePage(d.db, d.changeLog, site, id(input), actor);
      return { deleted: id(input) };
    },
  },
  {
    name: 'list_blogs',
    method: 'GET',
    endpoint: '/api/blog',
    part: 'querystring',
    description: `The website's blogs in list order (info_order, then newest info_date; or orderBy), ${MCP_PAGE_SIZE} at a time, with a few fields each unless fields or allFields asks for more; get_blog reads one whole. ${LIST_TEXT}`,
    describe: listArguments('info_id and id', MCP_BLOG_FIELDS),
    hidden: ALIASES,
    run: async (d, site, input) => listed(await blogs.listBlogs(d.db, site, smallList(input, MCP_BLOG_FIELDS))),
  },
  {
    name: 'get_blog',
    method: 'GET',
    endpoint: '/api/blog/:id',
    part: 'params',
    description: 'One blog by id, every field.',
    run: async (d, site, input) => one(await blogs.getBlog(d.db, site, id(input))),
  },
  {
    name: 'save_blog',
    method: 'POST',
    endpoint: '/api/blog',
    part: 'body',
    description:
      'Inserts a blog (without id; page, the page that holds it, is required) or updates one (with id; fields left out stay as they are); answers the blog as saved. info_filename is generated from the title when absent, and kept unique. Images are paths this website already stores (info_img, info_more_images); files cannot be uploaded over MCP (the REST API takes them).',
    hidden: BLOG_SYSTEM_FIELDS,
    describe: { migrateMode: 'true: a repeatable migration; images already on the blog are kept, and not added again.' },
    run: async (d, site, input, actor) => saved(await blogs.saveBlog(d, site, input as blogs.BlogInput, actor)),
  },
  {
    name: 'delete_blog',
    method: 'DELETE',
    endpoint: '/api/blog/:id',
    part: 'params',
    description: 'Deletes a blog, and its image files that no other record uses. Answers {"deleted": id}; restore_revision brings it back.',
    run: async (d, site, input, actor) => {
      await blogs.deleteBlog(d, site, id(input), actor);
      return { deleted: id(input) };
    },
  },
  {
    name: 'list_changes',
    method: 'GET',
    endpoint: '/api/changes',
    part: 'querystring',
    description:
      "What changed in the website's pages and blogs, oldest first: each entry names the record (type, id), op (create, update, delete, restore), at, actor and the revision it made. Send meta.nextCursor back as since for what changed after. A since older than the history kept is refused (410): read the records again, then follow from a call without since.",
    // A long-poll would hold the tool call and a database poll for up to its wait; an agent is no
    // syncing client that waits on the feed.
    without: ['wait'],
    defaults: { pageSize: MCP_PAGE_SIZE },
    describe: { pageSize: `Entries per answer, 1 to 999; default ${MCP_PAGE_SIZE}.` },
    run: async (d, site, input) => {
      const { since, type, id, pageSize } = input as { since?: string; type?: RecordType; id?: number; pageSize: number };
      const feed = await readFeed(d.db, site, { since: sinceOf(since, site), type, id, pageSize });
      return { data: feed.entries, meta: { pageSize, nextCursor: feed.nextCursor } };
    },
  },
  {
    name: 'list_revisions',
    method: 'GET',
    endpoint: '/api/{type}/:id/revisions',
    part: 'params',
    title: "List a page's or a blog's revisions",
    description:
      'The revisions of a page or a blog (type), newest first, one per change, deletes included; a deleted record keeps its revisions and can be restored.',
    run: async (d, site, input) => ({ data: (await listRevisions(d.db, site, recordType(input), id(input))).map(revisionOf) }),
  },
  {
    name: 'restore_revision',
    method: 'POST',
    endpoint: '/api/{type}/:id/revisions/:revision/restore',
    part: 'params',
    title: 'Restore a revision of a page or a blog',
    description:
      'Makes a revision (from list_revisions) the current content of its page or blog (type), deleted or not, and records a new revision; answers the record as restored. Refused (409) when the parent page is gone.',
    destructive: true,
    run: async (d, site, input, actor) =>
      saved(await restoreRevision(d.db, d.changeLog, site, recordType(input), id(input), Number(input.revision), actor)),
  },
];
