import type { FastifyInstance } from 'fastify';
import type { Scope } from '../auth/principal.js';
import type { BlogField } from '../content/blogs/blog.fields.js';
import * as blogs from '../content/blogs/blog.service.js';
import type { ActorRef } from '../content/history/change-log.js';
import type { PageField } from '../content/pages/page.fields.js';
import * as pages from '../content/pages/page.service.js';
import { type Listed, listMeta } from '../content/shared/envelope.js';
import { DEFAULT_PAGE_SIZE } from '../content/shared/schemas.js';
import { parsedRecords, type StoredItem } from '../content/shared/stored.js';
import type { DbHandle } from '../db/schema.js';
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
  readonly endpoint: string;
  readonly part: Part;
  /** What the REST reference says that MCP does differently. */
  readonly note?: string;
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

/**
 * The MCP tools, one per REST operation on pages and blogs. Each calls the service its route
 * calls; everything else (schemas, descriptions, scope) is read from the registered route.
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

/** Builds the tools from the routes registered so far; call it after the page and blog routes. */
export function contentTools(app: FastifyInstance): ContentTool[] {
  return OPERATIONS.map((op) => {
    const route = app.references.routes.get(op.endpoint)?.find((r) => r.method === op.method);
    if (!route?.scope) throw new Error(`no route ${op.method} ${op.endpoint} with a scope to build the ${op.name} tool from`);
    const input = inputSchemaOf(route.schema, op.part);
    const output = route.schema.response?.['200'];
    if (!input) throw new Error(`${op.method} ${op.endpoint} declares no ${op.part} schema`);
    const check = validatorFor<Input>(
      app,
      { schema: input as object, method: op.method, url: op.endpoint, httpPart: op.part },
      'arguments',
    );
    const readOnly = op.method === 'GET';
    const scopeText = `Needs scope ${route.scope}${readOnly ? ' (or everything:write)' : ''}.`;
    return {
      name: op.name,
      title: route.schema.summary ?? op.name,
      description: [`${route.schema.summary}.`, route.schema.description, op.note, scopeText].filter(Boolean).join('\n\n'),
      scope: route.scope as Scope,
      inputSchema: plain(input),
      outputSchema: output ? plain(output) : DELETED_OUTPUT,
      annotations: {
        readOnlyHint: readOnly,
        destructiveHint: op.method === 'DELETE',
        idempotentHint: op.method !== 'POST',
        openWorldHint: false,
      },
      validate(args) {
        // The validator coerces and fills defaults in place, as it does for a request.
        return check(structuredClone(args && typeof args === 'object' ? args : {}));
      },
      run: op.run,
    };
  });
}
