import { formDataBodySerializer } from './hey-api/client/index.js';
import { client } from './hey-api/client.gen.js';
import { createPage, deletePage, getPage, listPages, updatePage } from './hey-api/sdk.gen.js';
import type { BlogForm, CreateBlogErrors, CreateBlogResponses } from './hey-api/types.gen.js';
import { check, type Seen, type Target } from './scenario.js';

export async function run(target: Target): Promise<Seen> {
  client.setConfig({ baseUrl: target.baseUrl, headers: { 'X-Api-Id': target.apiId, 'X-Api-Key': target.apiKey } });

  const created = await createPage({ body: { page_usertitle: 'Made by hey-api', page_keywords: 'generated' } });
  check(created.data, `create: ${created.response?.status} ${JSON.stringify(created.error)}`);
  const page = created.data.data[0]!;
  const etag = created.response?.headers.get('etag') ?? '';

  const read = await getPage({ path: { id: page.page } });
  check(read.data, `read: ${read.response?.status}`);

  const listed = await listPages({ query: { tags: 'generated', cursor: '' } });
  check(listed.data, `list: ${listed.response?.status}`);

  const updated = await updatePage({
    path: { id: page.page },
    body: { page_usertitle: 'Changed by hey-api' },
    headers: { 'If-Match': etag },
  });
  check(updated.data, `update: ${updated.response?.status}`);
  // The ETag read before the update is stale now: the same write again is refused.
  const stale = await updatePage({ path: { id: page.page }, body: { page_usertitle: 'Lost' }, headers: { 'If-Match': etag } });

  // POST /api/blog offers JSON first, so createBlog sends JSON; the multipart form (BlogForm) goes
  // through the same generated client with hey-api's form serializer.
  const form: BlogForm = {
    data: JSON.stringify({ page: page.page, info_title: 'Blog by hey-api' }),
    uploadPrimaryImage: new Blob([target.png], { type: 'image/png' }),
  };
  const blog = await client.post<CreateBlogResponses, CreateBlogErrors>({
    url: '/api/blog',
    body: form,
    ...formDataBodySerializer,
    headers: { 'Content-Type': null },
  });
  check(blog.data, `blog: ${blog.response?.status} ${JSON.stringify(blog.error)}`);
  const stored = blog.data.data[0]!;

  // The page holds a blog now; the blog goes first.
  await client.delete({ url: '/api/blog/{id}', path: { id: stored.info_id } });
  const deleted = await deletePage({ path: { id: page.page } });
  const after = await getPage({ path: { id: page.page } });

  return {
    created: { id: page.page, title: page.page_usertitle, etag },
    read: read.data.data[0]!.page_usertitle,
    listed: listed.data.data.some((item) => item.page === page.page),
    updated: updated.data.data[0]!.page_usertitle,
    staleUpdateStatus: stale.response?.status ?? 0,
    deleteStatus: deleted.response?.status ?? 0,
    afterDeleteStatus: after.response?.status ?? 0,
    blog: { id: stored.info_id, image: stored.info_img, width: stored.info_img_json?.width ?? 0 },
  };
}
