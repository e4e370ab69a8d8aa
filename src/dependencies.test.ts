import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { packageFileAbove } from './reference/package-version.js';

/** The project root, from src/ or from its build in dist/src/. */
const root = path.dirname(packageFileAbove(import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [file] : [];
  });
}

/** Whether `code` loads package `name` at run time: a value import, a dynamic import or a require. */
function loads(code: string, name: string): boolean {
  const quoted = `'${name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(?:/[^']*)?'`;
  return new RegExp(
    `(?:^import (?!type )[^;]*?from ${quoted}|import\\(${quoted}\\)|[rR]equire\\(import\\.meta\\.url\\)\\(${quoted}\\))`,
    'm',
  ).test(code);
}

test('a type-only import does not count as loading a package', () => {
  assert.equal(loads("import type { X } from 'left-pad';", 'left-pad'), false);
  assert.equal(loads("import { type X, y } from 'left-pad/sub';", 'left-pad'), true);
  assert.equal(loads("const pg = createRequire(import.meta.url)('pg') as typeof PG;", 'pg'), true);
  assert.equal(loads("import x from 'pg-pool';", 'pg'), false);
});

test('every runtime dependency is loaded by src/ at run time', () => {
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const code = sourceFiles(path.join(root, 'src'))
    .map((file) => readFileSync(file, 'utf8'))
    .join('\n');
  for (const name of Object.keys(manifest.dependencies)) {
    assert.ok(loads(code, name), `${name} is in dependencies but nothing in src/ loads it: remove it, or move it to devDependencies`);
  }
});

/** A cast of a request's body, query string or path parameters, which the route's schema should type instead. */
const REQUEST_PART_CAST = /\brequest\.(?:body|query|params)\s*\)?\s+as\b/;

test('a request cast is recognised', () => {
  assert.ok(REQUEST_PART_CAST.test('const { id } = ctx.request.params as { id: string };'));
  assert.ok(REQUEST_PART_CAST.test('const form = (request.body as Form | undefined) ?? {};'));
  assert.equal(REQUEST_PART_CAST.test('const { id } = request.params;'), false);
});

test('no code casts a request part: routes are typed by their schemas', () => {
  const casts = sourceFiles(path.join(root, 'src')).flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => (REQUEST_PART_CAST.test(line) ? [`${path.relative(root, file)}:${i + 1}: ${line.trim()}`] : [])),
  );
  assert.deepEqual(casts, []);
});
