import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { principalOf } from '../../auth/authenticate.js';
import type { DbHandle } from '../../db/schema.js';
import type { Budget } from '../../http/budget.js';
import { withBodies } from '../../http/form-reader.js';
import { writePreconditions } from '../../http/representation.js';
import { validatorFor } from '../../http/validation.js';
import { actorOf, type ChangeLog } from '../history/change-log.js';
import { CURSOR_DOC } from '../shared/cursor.js';
import { Deleted, NoQuery, operations, sendList, sendSaved, sendStored, withinBudget } from '../shared/envelope.js';
import { patchOptions, takingForms } from '../shared/form-body.js';
import { IdParams, pageSizeOf, samePathId, writeBodies } from '../shared/schemas.js';
import { PAGE_BODY_FIELDS } from './page.fields.js';
import { PageList, PageListing, PageQuery, PageWrite, PageWritten } from './page.schemas.js';
import * as pages from './page.service.js';

const DOCS = {
  list: [
    'Lists the pages of the website, in menu order (page_order, then page) unless `orderBy` says otherwise. All filters combine (AND).',
    'Text filters (title, menutext, filename, tags) are case-insensitive patterns: `%` matches any text, `_` one character, `\\` escapes them; without a wildcard the whole value must match. `matchType` changes the comparison. `title` matches page_usertitle or page_menuname, `menutext` page_menuname only; `tag` is the same as `tags`.',
    '`orderBy`: `order` (default: page_order), `title` (page_usertitle), `menutext` (page_menuname), `created` (page_dt_begin, newest first), `updated` (page_lastmodified, newest first), `id`. `orderDirection`: `asc`, `desc`, or `reverse` (the opposite of the default of that order). Titles and menu texts sort ignoring case and accents, by their first 64 characters; ties go by id, in the same direction.',
    `Fields: every field by default (\`allFields=true\`). \`allFields=false\` leaves out the HTML bodies (${PAGE_BODY_FIELDS.join(', ')}); \`fields=a,b,c\` sends only those fields, and always page and id. An unknown name is a 400 listing the allowed ones.`,
    '`keywords` is a full-text search over titles, menu name, summary, SEO keywords and the text of the HTML; every word must occur.',
    '`publicContentOnly=true` leaves out member-only pages and every page below one.',
    CURSOR_DOC,
  ].join('\n\n'),
  get: 'Returns one page in the list envelope. The same as `?id=<id>`, except that an unknown id is 404. The ETag header can be sent back as If-Match on POST and DELETE.',
  post: [
    'Without `id`: inserts a page (201, Location header). With `id`: updates that page; fields absent from the body stay as they are (200).',
    'Every field of the page resource except the system fields (page, page_dt_begin, page_lastmodified) is writable; those may be sent back unchanged and are ignored. An unknown field is a 400 that names it.',
    '`page_parent` must be 0 or a page of the same website and may not make a cycle. `page_alias` is generated from the title when absent and kept unique within the website.',
    'Send `If-Match: <ETag>` to update only if nobody changed the page since you read it (412 otherwise).',
  ].join('\n\n'),
  patch:
    'Updates the page named in the path with the fields sent; every other field stays as it is (200). The body takes the same fields, forms and media types as POST; an `id` or `page` in it must be the one in the path. Send `If-Match: <ETag>` to update only if nobody changed the page since you read it (412 otherwise). An unknown id is 404.',
  delete: 'Deletes a page. A page that still has sub pages or blogs is 409. Honours If-Match.',
};

/** The page routes, mounted at `prefix` (/api, and /webapps/api kept out of the OpenAPI document). */
/** `lists`: the process's list budget, shared by every list route (envelope.ts, withinBudget). */
export async function registerPages(
  app: FastifyInstance,
  { db, changeLog, prefix, lists }: { db: DbHandle; changeLog: ChangeLog; prefix: string; lists: Budget },
): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  const { read, write } = operations('pages', prefix, { read: 'pages:read', write: 'pages:write' });

  routes.get(
    '/page',
    read('List pages', DOCS.list, { operationId: 'listPages', querystring: PageQuery, response: { 200: PageListing } }),
    async (request, reply) =>
      sendList(
        reply,
        await withinBudget(lists, reply, pageSizeOf(request.query.pageSize), () =>
          pages.listPages(db, principalOf(request).siteId, request.query),
        ),
      ),
  );

  routes.get(
    '/page/:id',
    read('Get one page', DOCS.get, { operationId: 'getPage', params: IdParams, querystring: NoQuery, response: { 200: PageList } }),
    (request, reply) => sendStored(reply, pages.getStoredPage(db, principalOf(request).siteId, request.params.id)),
  );

  await withBodies(app, (scope) => {
    const writes = scope.withTypeProvider<TypeBoxTypeProvider>();
    // The body is declared per media type, which the type provider cannot read: JSON bodies are
    // validated against PageWrite, and a form's data field by the same schema (takingForms).
    writes.post<{ Body: pages.PageInput | undefined; Querystring: Record<string, never> }>(
      '/page',
      takingForms(
        write(
          'Insert or update a page',
          DOCS.post,
          {
            operationId: 'createPage',
            querystring: NoQuery,
            body: writeBodies(PageWrite, 'page'),
            response: { 200: PageWritten, 201: PageWritten },
          },
          { conditional: true },
        ),
        validatorFor(scope, { schema: PageWrite, method: 'POST', url: `${prefix}/page`, httpPart: 'body' }, 'data'),
      ),
      async (request, reply) => {
        const principal = principalOf(request);
        const saved = await pages.savePage(
          db,
          changeLog,
          principal.siteId,
          request.body ?? {},
          actorOf(principal),
          writePreconditions(request),
        );
        return sendSaved(reply, saved, (page) => `${prefix}/page/${page.page}`);
      },
    );

    writes.patch<{ Body: pages.PageInput | undefined; Params: Static<typeof IdParams>; Querystring: Record<string, never> }>(
      '/page/:id',
      patchOptions(scope, write, {
        operationId: 'updatePage',
        prefix,
        noun: 'page',
        record: PageWrite,
        written: PageWritten,
        description: DOCS.patch,
      }),
      async (request, reply) => {
        const input = { ...request.body, id: samePathId(request.params.id, request.body?.id, 'page') };
        const principal = principalOf(request);
        const saved = await pages.savePage(db, changeLog, principal.siteId, input, actorOf(principal), writePreconditions(request));
        return sendSaved(reply, saved, (page) => `${prefix}/page/${page.page}`);
      },
    );

    writes.delete(
      '/page/:id',
      write(
        'Delete a page',
        DOCS.delete,
        { operationId: 'deletePage', params: IdParams, querystring: NoQuery, response: { 204: Deleted } },
        { problems: [409], conditional: true },
      ),
      async (request, reply) => {
        const principal = principalOf(request);
        await pages.deletePage(db, changeLog, principal.siteId, request.params.id, actorOf(principal), writePreconditions(request));
        return reply.code(204).send(null);
      },
    );
  });
}
