import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildBlogApp, storageOf } from '../../test/blog-fixtures.js';
import { CHANGE_LOG, json } from '../../test/helpers.js';
import { html, realisticPage, words } from '../../test/mcp.helpers.js';
import { SYSTEM_ACTOR } from '../content/history/change-log.js';
import { MCP_BLOG_FIELDS, MCP_PAGE_FIELDS, MCP_PAGE_SIZE } from './content.operations.js';
import { contentTools } from './content.tools.js';

/**
 * The size of one tool answer as an agent receives it: its JSON text and the same object as
 * structuredContent, so twice the text. Tokens are estimated as characters / 4 (English-like
 * JSON; no tokenizer is bundled), the figure docs/mcp.md reports.
 */
const estimatedTokens = (result: object) => Math.ceil((2 * JSON.stringify(result).length) / 4);

test('the MCP list tools answer 20 records of a few fields unless asked, well under 25k tokens (measured for docs/mcp.md)', async (t) => {
  const app = await buildBlogApp(t, { rateLimits: { api: 0, token: 0 } } as never);
  for (let i = 0; i < 60; i++) {
    const title = `${words(8, i)} ${i}`;
    const inject = (url: string, payload: object) => app.app.inject({ method: 'POST', url, headers: app.site.headers, payload });
    await inject('/api/page', realisticPage(i));
    await inject('/api/blog', {
      page: app.pageId,
      info_title: title,
      info_summary: words(40, i),
      info_tags: words(3, i).replace(/ /g, ','),
      info_fulltext: html(i),
    });
  }
  const tools = new Map(contentTools(app.app).map((tool) => [tool.name, tool]));
  const deps = { db: app.db.kysely, changeLog: CHANGE_LOG, images: storageOf(app), warn: () => {} };
  const figures: string[] = [];
  for (const [name, fields, ids] of [
    ['list_pages', MCP_PAGE_FIELDS, ['page', 'id']],
    ['list_blogs', MCP_BLOG_FIELDS, ['info_id', 'id']],
  ] as const) {
    const tool = tools.get(name)!;
    assert.match(tool.description, /20 at a time, with a few fields each unless fields or allFields asks for more/);
    const answer = (await tool.run(deps, app.site.siteId, tool.validate({}), SYSTEM_ACTOR)) as {
      data: Record<string, unknown>[];
      meta: object;
    };
    assert.equal(answer.data.length, MCP_PAGE_SIZE);
    assert.deepEqual(answer.meta, { total: 60 + (name === 'list_pages' ? 1 : 0), offset: 0, pageSize: MCP_PAGE_SIZE });
    assert.deepEqual(Object.keys(answer.data[0]!).sort(), [...ids, ...fields].sort());
    const small = estimatedTokens(answer);
    const full = estimatedTokens(await tool.run(deps, app.site.siteId, tool.validate({ allFields: 'true', pageSize: 200 }), SYSTEM_ACTOR));
    const lean = estimatedTokens(await tool.run(deps, app.site.siteId, tool.validate({ allFields: 'false' }), SYSTEM_ACTOR));
    figures.push(`${name}: default ${small} tokens; 20 records allFields=false ${lean}; 200 records, every field ${full}`);
    assert.ok(small < 10_000, `${name}: ${small} tokens, not well under 25,000`);
    // Asking for more still works: every field of 20 records, or the fields named.
    const every = (await tool.run(deps, app.site.siteId, tool.validate({ allFields: 'true' }), SYSTEM_ACTOR)) as { data: object[] };
    assert.ok(Object.keys(every.data[0]!).length > 30);
    const summary = name === 'list_pages' ? 'page_summary' : 'info_summary';
    const named = (await tool.run(deps, app.site.siteId, tool.validate({ fields: summary }), SYSTEM_ACTOR)) as { data: object[] };
    assert.deepEqual(Object.keys(named.data[0]!).sort(), [...ids, summary].sort());
  }
  t.diagnostic(figures.join('\n'));
});

test('the history tools: one tool for both record types, the arguments of the REST routes, MCP defaults, restore annotated destructive', async (t) => {
  const app = await buildBlogApp(t);
  const tools = new Map(contentTools(app.app).map((tool) => [tool.name, tool]));
  const deps = { db: app.db.kysely, changeLog: CHANGE_LOG, images: storageOf(app), warn: () => {} };
  const run = (name: string, args: object) => tools.get(name)!.run(deps, app.site.siteId, tools.get(name)!.validate(args), SYSTEM_ACTOR);

  const changes = tools.get('list_changes')!;
  assert.deepEqual(changes.annotations, { readOnlyHint: true, openWorldHint: false });
  assert.equal(changes.scope, 'history:read');
  const changeArgs = changes.inputSchema.properties as Record<string, { default?: unknown }>;
  assert.deepEqual(Object.keys(changeArgs), ['since', 'type', 'id', 'pageSize'], 'no wait: no long-poll over MCP');
  assert.equal(changeArgs.pageSize?.default, MCP_PAGE_SIZE);
  assert.throws(
    () => changes.validate({ wait: 5 }),
    (e: { errors: { field: string }[] }) => e.errors[0]?.field === 'wait',
  );
  await assert.rejects(run('list_changes', { since: 'nonsense' }), (e: { errors: { field: string }[] }) => e.errors[0]?.field === 'since');

  const revisions = tools.get('list_revisions')!;
  assert.equal(revisions.scope, 'history:read');
  assert.deepEqual(revisions.inputSchema.required, ['type', 'id']);
  assert.match(revisions.description, /^The revisions of a page or a blog \(type\), newest first/);
  assert.throws(
    () => revisions.validate({ type: 'image', id: 1 }),
    (e: { errors: { field: string }[] }) => e.errors[0]?.field === 'type',
  );

  const restore = tools.get('restore_revision')!;
  assert.equal(restore.scope, 'history:restore');
  // Destructive and not idempotent: the specification's defaults for a tool that writes.
  assert.deepEqual(restore.annotations, { openWorldHint: false });
  assert.deepEqual(restore.inputSchema.required, ['type', 'id', 'revision']);
  assert.deepEqual(
    restore.validate({ type: 'blog', id: '3', revision: '2' }),
    { type: 'blog', id: 3, revision: 2 },
    'coerced as a path is',
  );

  // A page written twice over REST, then its first revision restored through the tool.
  const page = await app.app.inject({ method: 'POST', url: '/api/page', headers: app.site.headers, payload: { page_usertitle: 'First' } });
  const id = json(page).data[0].page as number;
  await app.app.inject({ method: 'POST', url: '/api/page', headers: app.site.headers, payload: { id, page_usertitle: 'Second' } });
  const listed = (await run('list_changes', { type: 'page', id })) as { data: { op: string; revision: number }[]; meta: object };
  assert.deepEqual(
    listed.data.map((c) => [c.op, c.revision]),
    [
      ['create', 1],
      ['update', 2],
    ],
  );
  assert.deepEqual(Object.keys(listed.meta), ['pageSize', 'nextCursor']);
  const restored = (await run('restore_revision', { type: 'page', id, revision: 1 })) as { data: { page_usertitle: string }[] };
  assert.equal(restored.data[0]?.page_usertitle, 'First');
  const history = (await run('list_revisions', { type: 'page', id })) as { data: object[] };
  assert.deepEqual(Object.keys(history.data[0]!), ['revision', 'seq', 'op', 'at', 'actor'], 'the fields GET …/revisions sends');
  assert.deepEqual(
    history.data.map((r) => (r as { op: string }).op),
    ['restore', 'update', 'create'],
  );
  await assert.rejects(run('list_revisions', { type: 'blog', id }), /no blog/);
});

test('a tool shows less than it takes: aliases, system fields and far bounds are left out of the schema, and still validated', async (t) => {
  const app = await buildBlogApp(t);
  const tools = new Map(contentTools(app.app).map((tool) => [tool.name, tool]));
  const shownArguments = (name: string) => tools.get(name)!.inputSchema.properties as Record<string, Record<string, unknown>>;
  const fieldOf = (e: { errors: { field: string }[] }) => e.errors[0]?.field;

  // The REST aliases: not shown, still taken.
  const listPages = tools.get('list_pages')!;
  for (const alias of ['orderby', 'tag', 'page_parent', 'page']) assert.equal(shownArguments('list_pages')[alias], undefined, alias);
  assert.deepEqual(listPages.validate({ tag: 'news', orderby: 'title' }), { tag: 'news', orderby: 'title' });
  // Unions of string values as one enum, still refusing others.
  assert.deepEqual(shownArguments('list_pages').matchType?.enum, ['like', 'exact', 'contains', 'startsWith', 'endsWith']);
  assert.throws(
    () => listPages.validate({ matchType: 'regex' }),
    (e: { errors: { field: string }[] }) => fieldOf(e) === 'matchType',
  );

  // System fields a save ignores: not shown, taken so a record read can be sent back whole.
  const savePage = tools.get('save_page')!;
  for (const field of ['page', 'page_dt_begin', 'page_lastmodified']) assert.equal(shownArguments('save_page')[field], undefined, field);
  assert.equal(
    savePage.validate({ page_usertitle: 'x', page_lastmodified: '2020-01-01 00:00:00' }).page_lastmodified,
    '2020-01-01 00:00:00',
  );
  for (const field of ['info_id', 'info_timestamp', 'info_img_json', 'cid'])
    assert.equal(shownArguments('save_blog')[field], undefined, field);

  // Bounds no meant value reaches: not shown, still enforced.
  const order = shownArguments('save_page').page_order!;
  assert.deepEqual([order.minimum, order.maximum], [undefined, undefined]);
  assert.throws(
    () => savePage.validate({ page_order: 2 ** 31 }),
    (e: { errors: { field: string }[] }) => fieldOf(e) === 'page_order',
  );
  assert.equal(shownArguments('list_pages').title?.pattern, undefined);
  assert.equal(shownArguments('list_pages').title?.maxLength, undefined);
  assert.throws(
    () => listPages.validate({ title: 'a\u0000b' }),
    (e: { errors: { field: string }[] }) => fieldOf(e) === 'title',
  );
  assert.throws(
    () => listPages.validate({ title: 'a'.repeat(1001) }),
    (e: { errors: { field: string }[] }) => fieldOf(e) === 'title',
  );
  // Bounds that say what a value is stay shown.
  assert.equal(shownArguments('save_page').page_alias?.maxLength, 200);
  assert.equal(shownArguments('list_pages').parent?.minimum, 0);
});
