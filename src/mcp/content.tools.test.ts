import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildBlogApp, storageOf } from '../../test/blog-fixtures.js';
import { SYSTEM_ACTOR } from '../content/history/change-log.js';
import { contentTools, MCP_BLOG_FIELDS, MCP_PAGE_FIELDS, MCP_PAGE_SIZE } from './content.tools.js';

/** Words of a realistic text, as bench/seed.ts writes them. */
const words = (n: number, seed: number) =>
  Array.from({ length: n }, (_, i) => ['bread', 'oven', 'flour', 'crème', 'bakery', 'yeast'][(i * 7 + seed) % 6]).join(' ');
const html = (seed: number) =>
  Array.from({ length: 12 }, (_, i) => `<p>${words(40, seed + i)} <a href="/x">${words(3, i)}</a></p>`).join('\n');

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
    await inject('/api/page', {
      page_usertitle: title,
      page_menuname: words(2, i),
      page_summary: words(30, i),
      page_metatitle: `${title} | Bakery`,
      page_keywords: words(3, i).replace(/ /g, ', '),
      page_html_content: html(i),
      page_html_intro: `<p>${words(30, i)}</p>`,
    });
    await inject('/api/blog', {
      page: app.pageId,
      info_title: title,
      info_summary: words(40, i),
      info_tags: words(3, i).replace(/ /g, ','),
      info_fulltext: html(i),
    });
  }
  const tools = new Map(contentTools(app.app).map((tool) => [tool.name, tool]));
  const deps = { db: app.db.kysely, images: storageOf(app), warn: () => {} };
  const figures: string[] = [];
  for (const [name, fields, ids] of [
    ['list_pages', MCP_PAGE_FIELDS, ['page', 'id']],
    ['list_blogs', MCP_BLOG_FIELDS, ['info_id', 'id']],
  ] as const) {
    const tool = tools.get(name)!;
    assert.match(tool.description, /Over MCP: pageSize defaults to 20/);
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
    // Asking for more still works: every field of 20 records.
    const every = (await tool.run(deps, app.site.siteId, tool.validate({ allFields: 'true' }), SYSTEM_ACTOR)) as { data: object[] };
    assert.ok(Object.keys(every.data[0]!).length > 30);
  }
  t.diagnostic(figures.join('\n'));
});
