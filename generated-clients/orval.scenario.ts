import { type BlogData, createBlog, createPage, deleteBlog, deletePage, getPage, listPages, updatePage } from './orval/cms.js';
import { configure } from './orval-fetch.js';
import { check, type Seen, type Target } from './scenario.js';

export async function run(target: Target): Promise<Seen> {
  configure({ baseUrl: target.baseUrl, headers: { 'X-Api-Id': target.apiId, 'X-Api-Key': target.apiKey } });

  const created = await createPage({ page_usertitle: 'Made by orval', page_keywords: 'generated' });
  check(created.status === 201, `create: ${created.status} ${JSON.stringify(created.data)}`);
  const page = created.data.data[0]!;
  const etag = created.headers.get('etag') ?? '';

  const read = await getPage(page.page);
  check(read.status === 200, `read: ${read.status}`);

  const listed = await listPages({ tags: 'generated', cursor: '' });
  check(listed.status === 200, `list: ${listed.status}`);

  const updated = await updatePage(page.page, { page_usertitle: 'Changed by orval' }, { headers: { 'If-Match': etag } });
  check(updated.status === 200, `update: ${updated.status}`);
  const stale = await updatePage(page.page, { page_usertitle: 'Lost' }, { headers: { 'If-Match': etag } });

  const blog = await createBlog({
    data: JSON.stringify({ page: page.page, info_title: 'Blog by orval' }),
    uploadPrimaryImage: new Blob([target.png], { type: 'image/png' }),
  });
  check(blog.status === 201, `blog: ${blog.status} ${JSON.stringify(blog.data)}`);
  // orval's per-operation content-type filter (multipart for the request) also drops the JSON of
  // the answers, so this one answer is typed unknown: it is the document's BlogData.
  const stored = (blog.data as BlogData).data[0]!;

  await deleteBlog(stored.info_id);
  const deleted = await deletePage(page.page);
  const after = await getPage(page.page);

  return {
    created: { id: page.page, title: page.page_usertitle, etag },
    read: read.data.data[0]!.page_usertitle,
    listed: listed.data.data.some((item) => item.page === page.page),
    updated: updated.data.data[0]!.page_usertitle,
    staleUpdateStatus: stale.status,
    deleteStatus: deleted.status,
    afterDeleteStatus: after.status,
    blog: { id: stored.info_id, image: stored.info_img, width: stored.info_img_json?.width ?? 0 },
  };
}
