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
