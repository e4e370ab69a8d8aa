import type { FastifyInstance } from 'fastify';
import type { Scope } from '../auth/principal.js';
import type { BlogField } from '../content/blogs/blog.fields.js';
import * as blogs from '../content/blogs/blog.service.js';
import type { ActorRef, RecordType } from '../content/history/change-log.js';
import { type ChangeEntry, listRevisions, readFeed, restoreRevision, sinceOf } from '../content/history/history.service.js';
import type { PageField } from '../content/pages/page.fields.js';
import * as pages from '../content/pages/page.service.js';
import { type Listed, listMeta } from '../content/shared/envelope.js';
import { DEFAULT_PAGE_SIZE } from '../content/shared/schemas.js';
import { parsedRecords, type StoredItem } from '../content/shared/stored.js';
import type { DbHandle } from '../db/schema.js';
import { ValidationError } from '../errors.js';
import { validatorFor } from '../http/validation.js';
import type { RouteInfo } from '../reference/reference.js';
import type { ImageStorage } from '../storage/image-storage.js';

export interface ToolDeps {
  readonly db: DbHandle;
  readonly images: ImageStorage;
  readonly warn: (message: string, error: unknown) => void;
}

type Input = Record<string, unknown>;
/** A tool's work for the caller's website; `actor` is who its writes are recorded as (the MCP connection). */
type Run = (deps: ToolDeps, siteId: number, input: Input, actor: ActorRef) => Promise<Record<string, unknown>>;

/** Which part of the REST request a tool's arguments stand for: it decides the schema and the validator. */
type Part = 'querystring' | 'params' | 'body';

interface Operation {
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
  /** What the REST reference says that MCP does differently. */
  readonly note?: string;
  /** Arguments of the route that the tool does not take (its validator refuses them as unknown). */
  readonly without?: readonly string[];
  /** The tool's defaults where they differ from the route's. */
  readonly defaults?: Readonly<Record<string, unknown>>;
  /** Replaces a record's content as a delete removes it: annotated destructive. */
  readonly destructive?: true;
  readonly run: Run;
}

export interface ContentTool {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly scope: Scope;
  readonly inputSchema: Record<string, unknown>;
  readonly outputSchema: Record<string, unknown>;
  readonly annotations: Record<string, boolean | string>;
  /** The arguments, validated, coerced and defaulted as the REST route does; a ValidationError names each bad field. */
  readonly validate: (args: unknown) => Input;
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
const RECORD_TYPES = ['page', 'blog'] as const satisfies readonly RecordType[];

/** A revision as GET …/revisions lists it: the feed entry without the record it belongs to. */
const revisionOf = ({ revision, seq, op, at, actor }: ChangeEntry) => ({ revision, seq, op, at, actor });

/**
 * Over MCP a list answers fewer records and fields unless the arguments ask otherwise (pageSize,
 * fields, allFields): an agent's tool result should stay well under its 25,000-token limit, and a
 * REST default list of 200 full records is several times that (docs/mcp.md has the figures).
 */
export const MCP_PAGE_SIZE = 20;
export const MCP_PAGE_FIELDS = [
  'page_usertitle',
  'page_menuname',
  'page_alias',
  'page_parent',
  'page_order',
  'page_summary',
  'page_privacy',
  'page_lastmodified',
] as const satisfies readonly PageField[];
export const MCP_BLOG_FIELDS = [
  'page',
  'info_title',
  'info_filename',
  'info_summary',
  'info_tags',
  'info_show',
  'info_date',
  'info_order',
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

const listNote = (fields: readonly string[], ids: string) =>
  `Over MCP: pageSize defaults to ${MCP_PAGE_SIZE}, and unless \`fields\` or \`allFields\` is sent only ${ids} and ${fields.join(', ')} are returned; send \`allFields=true\` for every field, or \`fields\` for others.`;

const WRITE_NOTE =
  'Over MCP: the arguments are the JSON body; blog images are referenced by path (info_img, info_more_images: paths this website already uses), files cannot be uploaded; If-Match is not used.';
const DELETE_NOTE = 'Over MCP: If-Match is not used; the result names the deleted ID.';
const CHANGES_NOTE = `Over MCP: there is no \`wait\` (long-poll): a tool call is answered at once, and an agent asks again with meta.nextCursor as \`since\` when it wants what changed since; pageSize defaults to ${MCP_PAGE_SIZE}.`;
const RESTORE_NOTE = 'Over MCP: If-Match is not used; the result is the record as restored.';

/**
 * The MCP tools, one per REST operation on pages, blogs and their history (one for both types of
 * a per-type route). Each calls the service its route calls; everything else (schemas,
 * descriptions, scope) is read from the registered route.
 */
const OPERATIONS: readonly Operation[] = [
  {
    name: 'list_pages',
    method: 'GET',
    endpoint: '/api/page',
    part: 'querystring',
    note: listNote(MCP_PAGE_FIELDS, 'page, id'),
    run: async (d, site, input) => listed(await pages.listPages(d.db, site, smallList(input, MCP_PAGE_FIELDS))),
  },
  {
    name: 'get_page',
    method: 'GET',
    endpoint: '/api/page/:id',
    part: 'params',
    run: async (d, site, input) => one(await pages.getPage(d.db, site, id(input))),
  },
  {
    name: 'save_page',
    method: 'POST',
    endpoint: '/api/page',
    part: 'body',
    note: WRITE_NOTE,
    run: async (d, site, input, actor) => saved(await pages.savePage(d.db, site, input as pages.PageInput, actor)),
  },
  {
    name: 'delete_page',
    method: 'DELETE',
    endpoint: '/api/page/:id',
    part: 'params',
    note: DELETE_NOTE,
    run: async (d, site, input, actor) => {
      await pages.deletePage(d.db, site, id(input), actor);
      return { deleted: id(input) };
    },
  },
  {
    name: 'list_blogs',
    method: 'GET',
    endpoint: '/api/blog',
    part: 'querystring',
    note: listNote(MCP_BLOG_FIELDS, 'info_id, id'),
    run: async (d, site, input) => listed(await blogs.listBlogs(d.db, site, smallList(input, MCP_BLOG_FIELDS))),
  },
  {
    name: 'get_blog',
    method: 'GET',
    endpoint: '/api/blog/:id',
    part: 'params',
    run: async (d, site, input) => one(await blogs.getBlog(d.db, site, id(input))),
  },
  {
    name: 'save_blog',
    method: 'POST',
    endpoint: '/api/blog',
    part: 'body',
    note: WRITE_NOTE,
    run: async (d, site, input, actor) => saved(await blogs.saveBlog(d, site, input as blogs.BlogInput, actor)),
  },
  {
    name: 'delete_blog',
    method: 'DELETE',
    endpoint: '/api/blog/:id',
    part: 'params',
    note: DELETE_NOTE,
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
    note: CHANGES_NOTE,
    // A long-poll would hold the tool call and a database poll for up to its wait; an agent is no
    // syncing client that waits on the feed.
    without: ['wait'],
    defaults: { pageSize: MCP_PAGE_SIZE },
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
    run: async (d, site, input) => ({ data: (await listRevisions(d.db, site, recordType(input), id(input))).map(revisionOf) }),
  },
  {
    name: 'restore_revision',
    method: 'POST',
    endpoint: '/api/{type}/:id/revisions/:revision/restore',
    part: 'params',
    title: 'Restore a revision of a page or a blog',
    note: RESTORE_NOTE,
    destructive: true,
    run: async (d, site, input, actor) =>
      saved(await restoreRevision(d.db, site, recordType(input), id(input), Number(input.revision), actor)),
  },
];

/** DELETE answers 204 without a body; a tool result must be an object. */
const DELETED_OUTPUT = {
  type: 'object',
  properties: { deleted: { type: 'integer', description: 'ID of the deleted record' } },
  required: ['deleted'],
  additionalProperties: false,
};

/**
 * A route schema as a plain JSON Schema: TypeBox's symbol keys go with the JSON round trip, and
 * $id is dropped, since a client compiles every tool's schema into one validator and the same
 * record schema (PageRecord) appears in several tools.
 */
function plain(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema), (key, value) => (key === '$id' ? undefined : value)) as Record<string, unknown>;
}

function inputSchemaOf(schema: RouteInfo['schema'], part: Part): unknown {
  const declared = schema[part];
  // The blog POST declares its body per media type; JSON is the one MCP carries.
  return declared && 'content' in declared && declared.content ? declared.content['application/json']?.schema : declared;
}

type Schema = Record<string, unknown> & { properties?: Record<string, Record<string, unknown>>; required?: string[] };

/** The route an operation stands for, with the type put in for a per-type one. */
function routeOf(app: FastifyInstance, op: Operation, type?: RecordType): RouteInfo {
  const endpoint = type ? op.endpoint.replace('{type}', type) : op.endpoint;
  const route = app.references.routes.get(endpoint)?.find((r) => r.method === op.method);
  if (!route?.scope) throw new Error(`no route ${op.method} ${endpoint} with a scope to build the ${op.name} tool from`);
  return route;
}

/**
 * The tool's arguments: the route's schema for `part`, without what the tool does not take and
 * with its own defaults; a per-type tool's routes must agree on it, and it gains `type`.
 */
function argumentsOf(op: Operation, routes: readonly RouteInfo[], perType: boolean): Schema {
  const [first, ...others] = routes.map((route) => {
    const declared = inputSchemaOf(route.schema, op.part);
    if (!declared) throw new Error(`${op.method} ${op.endpoint} declares no ${op.part} schema`);
    return plain(declared) as Schema;
  });
  if (others.some((other) => JSON.stringify(other) !== JSON.stringify(first)))
    throw new Error(`the routes of ${op.endpoint} take different ${op.part}: one ${op.name} tool cannot stand for them`);
  const schema: Schema = { ...first! };
  if (!op.without && !op.defaults && !perType) return schema;
  const properties = { ...schema.properties };
  for (const name of op.without ?? []) delete properties[name];
  for (const [name, value] of Object.entries(op.defaults ?? {})) properties[name] = { ...properties[name], default: value };
  const required = schema.required?.filter((name) => name in properties);
  if (!perType) return { ...schema, properties, ...(required ? { required } : {}) };
  const type = { type: 'string', enum: [...RECORD_TYPES], description: 'page or blog' };
  return { ...schema, properties: { type, ...properties }, required: ['type', ...(required ?? [])] };
}

/** The result's schema: the route's 200 answer; for a per-type tool, either route's. */
function resultOf(routes: readonly RouteInfo[]): Record<string, unknown> {
  const answers = routes.map((route) => route.schema.response?.['200']);
  if (answers.some((answer) => !answer)) return DELETED_OUTPUT;
  const [first, ...others] = answers.map(plain);
  // MCP asks for an object at the root of an output schema, so the alternatives go below it.
  return others.every((other) => JSON.stringify(other) === JSON.stringify(first)) ? first! : { type: 'object', anyOf: [first, ...others] };
}

/**
 * How deep arguments may nest. A tool's arguments are an object of values and lists of values (two
 * levels); anything much deeper is no tool's, and a copy of it, by structuredClone or JSON, would
 * overflow the stack and answer a 500 where the caller sent a bad argument.
 */
const MAX_ARGUMENT_DEPTH = 32;

/** A copy of parsed JSON arguments, for the validator to change; a 400 naming the argument that nests too deep. */
function copyOf(value: unknown, depth = 0, field = 'arguments'): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_ARGUMENT_DEPTH) {
    throw new ValidationError([{ field, message: `nests more than ${MAX_ARGUMENT_DEPTH} levels deep` }]);
  }
  if (Array.isArray(value)) return value.map((item) => copyOf(item, depth + 1, field));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, copyOf(item, depth + 1, depth === 0 ? key : field)]));
}

/** Builds the tools from the routes registered so far; call it after the content and history routes. */
export function contentTools(app: FastifyInstance): ContentTool[] {
  return OPERATIONS.map((op) => {
    const perType = op.endpoint.includes('{type}');
    const routes = perType ? RECORD_TYPES.map((type) => routeOf(app, op, type)) : [routeOf(app, op)];
    const route = routes[0]!;
    if (routes.some((r) => r.scope !== route.scope)) throw new Error(`the routes of ${op.endpoint} need different scopes`);
    const input = argumentsOf(op, routes, perType);
    // The arguments are checked against the schema the tool shows, by the validator of the route's part.
    const check = validatorFor<Input>(app, { schema: input, method: op.method, url: op.endpoint, httpPart: op.part }, 'arguments');
    const readOnly = op.method === 'GET';
    const scopeText = `Needs scope ${route.scope}${readOnly ? ' (or everything:write)' : ''}.`;
    const title = op.title ?? route.schema.summary ?? op.name;
    // A per-type tool gives each route's reference text, under its type.
    const reference = perType ? routes.map((r, i) => `type ${RECORD_TYPES[i]}: ${r.schema.description}`) : [route.schema.description];
    return {
      name: op.name,
      title,
      description: [`${title}.`, ...reference, op.note, scopeText].filter(Boolean).join('\n\n'),
      scope: route.scope as Scope,
      inputSchema: input,
      outputSchema: resultOf(routes),
      annotations: {
        readOnlyHint: readOnly,
        destructiveHint: op.method === 'DELETE' || op.destructive === true,
        idempotentHint: op.method !== 'POST',
        openWorldHint: false,
      },
      validate(args) {
        // The validator coerces and fills defaults in place, as it does for a request.
        return check(copyOf(args && typeof args === 'object' ? args : {}));
      },
      run: op.run,
    };
  });
}
