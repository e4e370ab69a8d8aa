import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { principalOf } from '../../auth/authenticate.js';
import type { Config } from '../../config.js';
import type { DbHandle } from '../../db/schema.js';
import type { Budget } from '../../http/budget.js';
import { clientGone } from '../../http/client-gone.js';
import { withBodies } from '../../http/form-reader.js';
import { writePreconditions } from '../../http/representation.js';
import { validatorFor } from '../../http/validation.js';
import type { ImageProcessor } from '../../storage/image-processor.js';
import type { ImageStorage } from '../../storage/image-storage.js';
import { actorOf, type ChangeLog } from '../history/change-log.js';
import { CURSOR_DOC } from '../shared/cursor.js';
import { Deleted, NoQuery, operations, sendList, sendSaved, sendStored, withinBudget } from '../shared/envelope.js';
import { patchOptions, takingForms } from '../shared/form-body.js';
import { IdParams, pageSizeOf, queryBoolean, samePathId } from '../shared/schemas.js';
import { BLOG_BODY_FIELDS } from './blog.fields.js';
import { BlogBodies, BlogList, BlogListing, BlogQuery, BlogWrite, BlogWriteQuery, BlogWritten } from './blog.schemas.js';
import * as blogs from './blog.service.js';
import { readBlogForm } from './blog.uploads.js';
import { withStagedUploads } from './staged-uploads.js';

const DOCS = {
  list: [
    'Lists the blogs of the website: by info_order, then info_date newest first, then info_id, unless `orderBy` says otherwise. All filters combine (AND).',
    'Text filters (title, filename, tags) are case-insensitive patterns: `%` matches any text, `_` one character, `\\` escapes them; without a wildcard the whole value must match. `matchType` changes the comparison. `tags` matches any one of a blog’s comma-separated tags; `tag` is the same as `tags`.',
    '`orderBy`: `order` (default: info_order, then info_date newest first), `date` (info_date, newest first), `title` (info_title), `created` (newest first: blogs keep no creation time, and ids are given out in creation order), `updated` (info_timestamp, newest first), `id`. `orderDirection`: `asc`, `desc`, or `reverse` (the opposite of the default of that order). Titles sort ignoring case and accents, by their first 64 characters; ties go by id, in the same direction.',
    `Fields: every field by default (\`allFields=true\`). \`allFields=false\` leaves out the HTML bodies (${BLOG_BODY_FIELDS.join(', ')}); \`fields=a,b,c\` sends only those fields, and always info_id and id. An unknown name is a 400 listing the allowed ones.`,
    '`keywords` is a full-text search over title, SEO title, summary, tags and the text of the HTML; every word must occur.',
    '`publicContentOnly=true` keeps blogs that are visible (info_show Y), whose info_hideuntil date has come (or is empty), whose info_date is not in the future, and whose page is public (dates in UTC).',
    CURSOR_DOC,
  ].join('\n\n'),
  get: 'Returns one blog in the list envelope. The same as `?id=<id>`, except that an unknown id is 404. The ETag header can be sent back as If-Match on POST and DELETE.',
  post: [
    'Without `id`: inserts a blog (201, Location header); `page` is required. With `id`: updates that blog; fields absent from the body stay as they are (200). An update that changes nothing leaves info_timestamp as it was.',
    'Content type application/json, or multipart/form-data with the blog JSON in the field `data` and image files in uploadPrimaryImage, uploadAdditionalImage, uploadAdditionalImages (or the older primaryImage, additionalImage, additionalImages). Files must be JPEG, PNG, GIF, WebP or AVIF by their content (415 otherwise) and within the size and count limits (413). They are stored under generated names and served at /images/<name>; info_img and info_more_images get those paths, info_img_json the primary image’s width, height, bytes and type. If the record is refused, no file is kept.',
    'System fields (info_id, info_timestamp, info_img_json, info_comment_count, info_blogcnt, cid, site_search_keywords_updated) may be sent back unchanged and are ignored. An unknown field is a 400 that names it. `page` must be a page of the same website. `info_filename` is generated from the title when absent and kept unique within the website.',
    '`migrateMode` (query or body, true or 1) makes repeated migrations safe: images already on the blog are kept; only originals not seen before are added; the primary image never appears in info_more_images.',
    'Send `If-Match: <ETag>` to update only if nobody changed the blog since you read it (412 otherwise).',
  ].join('\n\n'),
  patch:
    'Updates the blog named in the path with the fields sent; every other field stays as it is (200). The body takes the same fields, media types and forms as POST (images are uploaded with POST); an `id` or `info_id` in it must be the one in the path. Send `If-Match: <ETag>` to update only if nobody changed the blog since you read it (412 otherwise). An unknown id is 404.',
  delete: 'Deletes a blog, and then its image files that no other record uses. Honours If-Match.',
};

/** `lists`: the process's list budget, shared by every list route (envelope.ts, withinBudget). */
export async function registerBlogs(
  app: FastifyInstance,
  {
    db,
    changeLog,
    config,
    prefix,
    images,
    processor,
    lists,
  }: { db: DbHandle; changeLog: ChangeLog; config: Config; prefix: string; images: ImageStorage; processor: ImageProcessor; lists: Budget },
): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  const { read, write } = operations('blogs', prefix, { read: 'blogs:read', write: 'blogs:write' });
  const deps: blogs.BlogDeps = { db, changeLog, images, processor, warn: (message, error) => app.log.warn({ err: error }, message) };
  const checkData = dataValidator(app, `${prefix}/blog`);

  routes.get(
    '/blog',
    read('List blogs', DOCS.list, { operationId: 'listBlogs', querystring: BlogQuery, response: { 200: BlogListing } }),
    async (request, reply) =>
      sendList(
        reply,
        await withinBudget(lists, reply, pageSizeOf(request.query.pageSize), () =>
          blogs.listBlogs(db, principalOf(request).siteId, request.query),
        ),
      ),
  );

  routes.get(
    '/blog/:id',
    read('Get one blog', DOCS.get, { operationId: 'getBlog', params: IdParams, querystring: NoQuery, response: { 200: BlogList } }),
    (request, reply) => sendStored(reply, blogs.getStoredBlog(db, principalOf(request).siteId, request.params.id)),
  );

  await withBodies(app, (scope) => {
    const writes = scope.withTypeProvider<TypeBoxTypeProvider>();
    // The body is declared per media type, which the type provider cannot read: JSON bodies are
    // validated against BlogWrite before the handler runs, and a multipart body is left unparsed
    // (undefined) for readBlogForm, which holds its data field to the same schema.
    writes.post<{ Body: blogs.BlogInput | undefined; Querystring: Static<typeof BlogWriteQuery> }>(
      '/blog',
      takingForms(
        write(
          'Insert or update a blog',
          DOCS.post,
          { operationId: 'createBlog', querystring: BlogWriteQuery, body: BlogBodies, response: { 200: BlogWritten, 201: BlogWritten } },
          { conditional: true },
        ),
        checkData,
        { multipart: false },
      ),
      async (request, reply) => {
        const options = {
          migrate: queryBoolean(request.query.migrateMode),
          precondition: writePreconditions(request),
          signal: clientGone(reply),
        };
        const saved = await withStagedUploads(images, async (uploads) => {
          // A multipart form is read first: its credentials may be among its fields.
          const input = request.isMultipart() ? await readBlogForm(request, uploads, config.uploads, checkData) : (request.body ?? {});
          const principal = principalOf(request);
          const { siteId, defaultPage } = principal;
          return blogs.saveBlog(deps, siteId, input, actorOf(principal), { ...options, defaultPage, uploads });
        });
        return sendSaved(reply, saved, (blog) => `${prefix}/blog/${blog.info_id}`);
      },
    );

    writes.patch<{ Body: blogs.BlogInput | undefined; Params: Static<typeof IdParams>; Querystring: Record<string, never> }>(
      '/blog/:id',
      patchOptions(scope, write, {
        operationId: 'updateBlog',
        prefix,
        noun: 'blog',
        record: BlogWrite,
        written: BlogWritten,
        description: DOCS.patch,
      }),
      async (request, reply) => {
        const input = { ...request.body, id: samePathId(request.params.id, request.body?.id, 'blog') };
        const principal = principalOf(request);
        const saved = await blogs.saveBlog(deps, principal.siteId, input, actorOf(principal), {
          precondition: writePreconditions(request),
        });
        return sendSaved(reply, saved, (blog) => `${prefix}/blog/${blog.info_id}`);
      },
    );

    writes.delete(
      '/blog/:id',
      write(
        'Delete a blog',
        DOCS.delete,
        { operationId: 'deleteBlog', params: IdParams, querystring: NoQuery, response: { 204: Deleted } },
        { conditional: true },
      ),
      async (request, reply) => {
        const principal = principalOf(request);
        await blogs.deleteBlog(deps, principal.siteId, request.params.id, actorOf(principal), writePreconditions(request));
        return reply.code(204).send(null);
      },
    );
  });
}

/** The data field of a form is held to exactly the JSON body's schema, by the app's own validator. */
function dataValidator(app: FastifyInstance, url: string): (data: unknown) => blogs.BlogInput {
  return validatorFor<blogs.BlogInput>(app, { schema: BlogWrite, method: 'POST', url, httpPart: 'body' }, 'data');
}
