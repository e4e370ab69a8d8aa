import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { Config } from '../../config.js';
import type { DbHandle } from '../../db/schema.js';
import { registerResourceRoutes } from '../shared/resource.routes.js';
import { queryBoolean } from '../shared/schemas.js';
import { PageList, PageQuery, PageRecord, PageWrite, PageWritten } from './page.schemas.js';
import * as pages from './page.service.js';

const DOCS = {
  list: [
    'Lists the pages of the website, in menu order (page_order, then page). All filters combine (AND).',
    'Text filters (title, filename, tags) are case-insensitive patterns: `%` matches any text, `_` one character, `\\` escapes them; without a wildcard the whole value must match. `matchType` changes the comparison.',
    '`keywords` is a full-text search over titles, menu name, summary, SEO keywords and the text of the HTML; every word must occur.',
    '`publicContentOnly=true` leaves out member-only pages and every page below one.',
  ].join('\n\n'),
  get: 'Returns one page in the list envelope. The same as `?id=<id>`, except that an unknown id is 404. The ETag header can be sent back as If-Match on POST and DELETE.',
  post: [
    'Without `id`: inserts a page (201, Location header). With `id`: updates that page; fields absent from the body stay as they are (200).',
    'Every field of the page resource except the system fields (page, page_dt_begin, page_lastmodified) is writable; those may be sent back unchanged and are ignored. An unknown field is a 400 that names it.',
    '`page_parent` must be 0 or a page of the same website and may not make a cycle. `page_alias` is generated from the title when absent and kept unique within the website.',
    'Send `If-Match: <ETag>` to update only if nobody changed the page since you read it (412 otherwise).',
  ].join('\n\n'),
  delete: 'Deletes a page. A page that still has sub pages or blogs is 409. Honours If-Match.',
};

export async function registerPages(app: FastifyInstance, { db, prefix }: { db: DbHandle; config: Config; prefix: string }) {
  registerResourceRoutes<pages.PageRecord, Static<typeof PageQuery>>(app, prefix, {
    path: '/page',
    noun: 'page',
    tag: 'pages',
    schemas: { record: PageRecord, list: PageList, written: PageWritten, query: PageQuery, write: PageWrite },
    docs: DOCS,
    list: (siteId, q) =>
      pages.listPages(db, siteId, {
        id: q.id,
        page: q.page,
        // parent and page_parent are synonyms; two different values can match nothing.
        parent: q.parent !== undefined && q.page_parent !== undefined && q.parent !== q.page_parent ? -1 : (q.parent ?? q.page_parent),
        title: q.title,
        filename: q.filename,
        tags: q.tags,
        keywords: q.keywords,
        matchType: q.matchType,
        publicContentOnly: queryBoolean(q.publicContentOnly),
        offset: q.offset,
        pageSize: q.pageSize,
      }),
    get: (siteId, id) => pages.getPage(db, siteId, id),
    save: (siteId, request, precondition) => pages.savePage(db, siteId, request.body as pages.PageInput, precondition),
    remove: (siteId, id, precondition) => pages.deletePage(db, siteId, id, precondition),
    idOf: (record) => record.page,
  });
}
