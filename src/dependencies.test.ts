import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/** The project root, from src/ or from its build in dist/src/. */
const root = [1, 2]
  .map((up) => path.resolve(fileURLToPath(import.meta.url), '../'.repeat(up)))
  .find((dir) => {
    try {
      return JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).name === 'cms-content-api';
    } catch {
      return false;
    }
  });

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [file] : [];
  });
}

test('every runtime dependency is loaded by src/ at run time (a type-only import does not count)', () => {
  assert.ok(root, 'package.json found');
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const code = sourceFiles(path.join(root, 'src'))
    .map((file) => readFileSync(file, 'utf8'))
    .join('\n');
  for (const name of Object.keys(manifest.dependencies)) {
    const quoted = `'${name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(?:/[^']*)?'`;
    const loaded = new RegExp(
      `(?:^import (?!type )[^;]*?from ${quoted}|import\\(${quoted}\\)|require\\(import\\.meta\\.url\\)\\(${quoted}\\))`,
      'm',
    );
    assert.match(code, loaded, `${name} is in dependencies but nothing in src/ loads it: remove it, or move it to devDependencies`);
  }
});
