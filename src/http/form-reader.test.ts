import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers.js';

/**
 * The hooks each route of one method runs, read from Fastify's own route tree: each top-level
 * branch (`api/page`, `webapps/api/blog`…) with the text of all its routes and hooks. The tree
 * hangs from a `/` line when the method has a route there, and from nothing otherwise.
 */
function branches(tree: string): Map<string, string> {
  const lines = tree.split('\n');
  const indent = lines[0]?.startsWith('└── / ') ? 4 : 0;
  const found = new Map<string, string>();
  let name = '';
  for (const line of lines) {
    const top = new RegExp(`^ {${indent}}[├└]── /?(\\S+)`).exec(line);
    if (top?.[1]) name = top[1];
    if (name) found.set(name, `${found.get(name) ?? ''}${line}\n`);
  }
  return found;
}

const CONTENT = ['api/page', 'api/blog', 'webapps/api/page', 'webapps/api/blog'];

test('reads of pages and blogs run none of the form plugin hooks, which their writes keep', async (t) => {
  const { app } = await buildTestApp(t);
  await app.ready();
  const reads = branches(app.printRoutes({ includeHooks: true, commonPrefix: false, method: 'GET' }));
  const writes = branches(app.printRoutes({ includeHooks: true, commonPrefix: false, method: 'POST' }));
  for (const resource of CONTENT) {
    const read = reads.get(resource);
    const write = writes.get(resource);
    assert.ok(read && write, `${resource} has reads and writes`);
    // The multipart plugin's hooks are its scope's only onResponse ones.
    assert.doesNotMatch(read, /\(onResponse\)/, `GET ${resource}`);
    assert.match(write, /\(onResponse\)/, `POST ${resource}`);
    // Both answer with the same request hooks otherwise: the same count as the change feed.
    const requestHooks = (text: string) => /\(onRequest\) (\[.*\])/.exec(text)?.[1];
    assert.equal(requestHooks(read), requestHooks(reads.get('api/changes') ?? ''), `GET ${resource} onRequest`);
  }
});
