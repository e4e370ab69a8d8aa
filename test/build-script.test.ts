import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { packageFileAbove } from '../src/reference/package-version.js';

/** scripts/build.mjs, which `npm start` (src/ only, when changed) and `npm test` (--all) run. */
const BUILD = path.join(path.dirname(packageFileAbove(import.meta.url)), 'scripts', 'build.mjs');

/** A project laid out like this one (src/ with tests beside the code, test/), small enough to compile in a moment. */
function tinyProject(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cms-build-'));
  const compilerOptions = {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    // Only the ES library and no @types: tsc starts in about a second.
    lib: ['ES2022'],
    types: [],
    skipLibCheck: true,
    outDir: 'dist',
    rootDir: '.',
  };
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['src', 'test'] }));
  writeFileSync(
    path.join(dir, 'tsconfig.build.json'),
    JSON.stringify({ extends: './tsconfig.json', include: ['src'], exclude: ['src/**/*.test.ts'] }),
  );
  mkdirSync(path.join(dir, 'src'));
  mkdirSync(path.join(dir, 'test'));
  writeFileSync(path.join(dir, 'src', 'a.ts'), 'export const a: number = 1;\n');
  writeFileSync(path.join(dir, 'src', 'a.test.ts'), "import { a } from './a.js';\nexport const checked = a;\n");
  writeFileSync(path.join(dir, 'test', 'b.test.ts'), "import { a } from '../src/a.js';\nexport const b = a;\n");
  return dir;
}

test('the build compiles src/ only when something it depends on changed, and shares dist/src with the full build', (t) => {
  const dir = tinyProject();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (...parts: string[]) => path.join(dir, ...parts);
  const build = (...args: string[]) => {
    const result = spawnSync(process.execPath, [BUILD, ...args], { cwd: dir, encoding: 'utf8' });
    return { status: result.status, said: `${result.stdout}${result.stderr}` };
  };

  // A fresh clone: src/ compiled, its tests left out.
  let run = build();
  assert.equal(run.status, 0, run.said);
  assert.match(run.said, /compiling src\/ \(no build of src\/ yet\)/);
  assert.equal(readFileSync(file('dist', 'src', 'a.js'), 'utf8').includes('= 1'), true);
  assert.equal(existsSync(file('dist', 'src', 'a.test.js')), false);

  // Nothing changed, or only a test: no compile, nothing rewritten.
  const built = statSync(file('dist', 'src', 'a.js')).mtimeMs;
  writeFileSync(file('src', 'a.test.ts'), "import { a } from './a.js';\nexport const checked = a + 1;\n");
  run = build();
  assert.equal(run.status, 0, run.said);
  assert.match(run.said, /dist\/src is up to date/);
  assert.equal(statSync(file('dist', 'src', 'a.js')).mtimeMs, built);

  // A source changed.
  writeFileSync(file('src', 'a.ts'), 'export const a: number = 2;\n');
  run = build();
  assert.match(run.said, /compiling src\/ \(src\/ changed\)/);
  assert.equal(readFileSync(file('dist', 'src', 'a.js'), 'utf8').includes('= 2'), true);

  // The tests' build (everything) rewrites dist/src from the same sources: a start after it compiles nothing.
  run = build('--all');
  assert.equal(run.status, 0, run.said);
  assert.match(run.said, /compiling src\/, test\/, bench\/, client\/src\/ \(no build of src\/, test\/, bench\/, client\/src\/ yet\)/);
  assert.equal(existsSync(file('dist', 'src', 'a.test.js')), true);
  assert.equal(existsSync(file('dist', 'test', 'b.test.js')), true);
  assert.match(build().said, /dist\/src is up to date/);

  // The tests' build again with nothing changed (npm test after npm run build): no compile; a test
  // changed: compiled.
  const tested = statSync(file('dist', 'test', 'b.test.js')).mtimeMs;
  run = build('--all');
  assert.equal(run.status, 0, run.said);
  assert.match(run.said, /dist\/ is up to date/);
  assert.equal(statSync(file('dist', 'test', 'b.test.js')).mtimeMs, tested);
  writeFileSync(file('test', 'b.test.ts'), "import { a } from '../src/a.js';\nexport const b = a + 2;\n");
  assert.match(build('--all').said, /compiling src\/, test\/, bench\/, client\/src\/ \(src\/, test\/, bench\/, client\/src\/ changed\)/);
  assert.equal(readFileSync(file('dist', 'test', 'b.test.js'), 'utf8').includes('a + 2'), true);

  // Another compile (npm run dev, a bare tsc, the src/ build) wrote dist/src after the stamps: both
  // builds compile again.
  const later = new Date(Date.now() + 60_000);
  utimesSync(file('dist', 'src', 'a.js'), later, later);
  assert.match(build().said, /dist\/src was rewritten by another compile/);
  assert.match(build('--all').said, /dist\/src was rewritten by another compile/);

  // An output went missing.
  rmSync(file('dist', 'src', 'a.js'));
  assert.match(build().said, /dist\/ lacks the build of src\/a\.ts/);
  assert.equal(existsSync(file('dist', 'src', 'a.js')), true);

  // A type error fails the build (so `npm start` stops), and the next start tries again.
  writeFileSync(file('src', 'a.ts'), "export const a: number = 'three';\n");
  run = build();
  assert.notEqual(run.status, 0);
  assert.match(run.said, /TS2322/);
  run = build();
  assert.notEqual(run.status, 0);
  assert.match(run.said, /compiling src\/ \(no build of src\/ yet\)/);

  assert.match(build('--watch').said, /unknown argument --watch/);
});
