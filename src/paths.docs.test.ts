import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * A comment or a doc that names a file which was renamed or removed sends its reader looking for
 * nothing. This test reads the docs and the comments of the code and fails on each such name.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What is read. bench/README.md is a dated record of measurements: it names files as they were then. */
const ROOTS = ['src', 'test', 'docs', 'bench', 'scripts', 'README.md', '.dependency-cruiser.cjs'];
const SKIPPED = new Set(['bench/README.md']);
const TEXT = /\.(ts|md|mjs|cjs)$/;

function filesUnder(relative: string): string[] {
  if (!existsSync(path.join(ROOT, relative))) return [];
  if (TEXT.test(relative)) return [relative];
  return readdirSync(path.join(ROOT, relative), { recursive: true, encoding: 'utf8' })
    .map((entry) => path.posix.join(relative, entry.split(path.sep).join('/')))
    .filter((file) => TEXT.test(file) && !SKIPPED.has(file));
}

/** The comments of a source file; a doc is read whole. String literals in code are not names a reader follows. */
function prose(file: string, text: string): string {
  if (file.endsWith('.md')) return text;
  const comments = text.match(/\/\*[\s\S]*?\*\/|(?<![:'"`\w])\/\/[^\n]*/g) ?? [];
  return comments.join('\n');
}

/**
 * A path from the root (src/…, test/…, docs/…, bench/…, scripts/…, or the same under dist/ as
 * compiled .js) or a .ts file named relative to the file's folder, one of its parents or src/, or
 * by its name alone. Names of files inside dependencies (.js without a root) are not checked.
 */
const NAME = /(?<![\w./@-])((?:dist\/)?(?:src|test|docs|bench|scripts)\/[\w./-]*[\w-]|[\w.-]+(?:\/[\w.-]+)*\.ts)(?![\w/])/g;

function exists(name: string, from: string, basenames: Set<string>): boolean {
  const bare = name.replace(/^dist\//, '');
  const candidates = [bare, bare.replace(/\.js$/, '.ts')];
  if (candidates.some((candidate) => existsSync(path.join(ROOT, candidate)))) return true;
  if (/^(src|test|docs|bench|scripts)\//.test(bare)) return false;
  if (!bare.includes('/')) return basenames.has(bare);
  // Docs name the code's files from src/, as the code names its neighbours from its own folder.
  for (let folder = path.posix.dirname(from); folder !== '.'; folder = path.posix.dirname(folder)) {
    if (existsSync(path.join(ROOT, folder, bare))) return true;
  }
  return existsSync(path.join(ROOT, 'src', bare));
}

test('every src/, test/ and docs/ path a comment or a doc names exists', () => {
  const files = ROOTS.flatMap(filesUnder);
  assert.ok(files.includes('src/config.ts') && files.includes('docs/architecture.md'), 'the walk reaches the code and the docs');
  const basenames = new Set(files.map((file) => path.posix.basename(file)));
  const missing: string[] = [];
  for (const file of files) {
    const text = prose(file, readFileSync(path.join(ROOT, file), 'utf8'));
    for (const match of text.matchAll(NAME)) {
      const name = match[1] ?? '';
      // A glob or a suffix (`*.table.ts`, `.test.ts`) names no one file.
      if (name.startsWith('.') || name.includes('*')) continue;
      if (!exists(name, file, basenames)) missing.push(`${file}: ${name}`);
    }
  }
  assert.deepEqual(missing, [], 'each of these names a file that does not exist');
});

test('a name of a file that does not exist is found', () => {
  const basenames = new Set(['principal.ts']);
  assert.equal(exists('src/auth/principal-store.ts', 'src/config.ts', basenames), false);
  assert.equal(exists('sqlite/data-version.ts', 'src/db/change-source.ts', basenames), false);
  assert.equal(exists('principal-store.ts', 'src/config.ts', basenames), false);
  assert.equal(exists('src/auth/principal.ts', 'src/config.ts', basenames), true);
  assert.equal(exists('dist/src/server.js', 'README.md', basenames), true);
  assert.equal(exists('sqlite/database.ts', 'src/db/change-source.ts', basenames), true);
});
