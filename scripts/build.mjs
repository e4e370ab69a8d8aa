#!/usr/bin/env node
import { spawnSync } from 'node:child_process';
// Compiles the TypeScript into dist/, skipping the compile when nothing it depends on changed.
//
//   node scripts/build.mjs         src/ only, tests excluded (tsconfig.build.json): what `npm start`
//                                  needs. Skipped when dist/src already holds the build of these sources.
//   node scripts/build.mjs --all   src/, test/ and bench/ (tsconfig.json): what the tests and benches
//                                  run. Always compiles, as `tsc -p .` did.
//
// Both write the same dist/src files (same compiler options, rootDir and outDir), so a start after a
// test build and a test after a start both find what they need. What makes the skip safe is the stamp
// dist/.src-build: a hash of everything the src/ build reads, written only after a compile that
// succeeded. The src/ build is skipped only when the stamp matches the sources now, every source has
// its .js, and nothing in dist/src is newer than the stamp (`npm run dev` or a bare `tsc` rewrote it).
// tsc's own --incremental is not used: its build info cannot see dist/src files another compile
// rewrote, so it could skip files that need writing again.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const STAMP = path.join('dist', '.src-build');
/** Besides the sources: compiler options, the package's module type and the compiler itself. */
const CONFIG_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package.json'];

/** src/**\/*.ts without the tests, as relative paths, sorted. */
function sources(dir = 'src') {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) return sources(file);
      return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [file] : [];
    })
    .sort();
}

function compiler() {
  const require = createRequire(import.meta.url);
  return { tsc: require.resolve('typescript/bin/tsc'), version: require('typescript/package.json').version };
}

/** One hash over the file names and contents the src/ build reads, and the compiler's version. */
function sourceHash(files, tscVersion) {
  const hash = createHash('sha256').update(`typescript ${tscVersion}\n`);
  for (const file of [...CONFIG_FILES, ...files]) {
    hash.update(`${file}\n`);
    hash.update(existsSync(file) ? readFileSync(file) : '(none)');
    hash.update('\n');
  }
  return hash.digest('hex');
}

/** The newest modification time under dir, in milliseconds (0 when empty or absent). */
function newestUnder(dir) {
  if (!existsSync(dir)) return 0;
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(file) : statSync(file).mtimeMs);
  }
  return newest;
}

/** Why dist/src needs compiling again, or undefined when it holds the build of these sources. */
function staleBecause(files, hash) {
  if (!existsSync(STAMP)) return 'no build of src/ yet';
  if (readFileSync(STAMP, 'utf8').trim() !== hash) return 'src/ changed';
  const missing = files.find((file) => !file.endsWith('.d.ts') && !existsSync(path.join('dist', file.replace(/\.ts$/, '.js'))));
  if (missing) return `dist/ lacks the build of ${missing}`;
  if (newestUnder(path.join('dist', 'src')) > statSync(STAMP).mtimeMs) return 'dist/src was rewritten by another compile';
  return undefined;
}

function compile(tsc, project) {
  const result = spawnSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function main(args) {
  const all = args.includes('--all');
  const unknown = args.filter((arg) => arg !== '--all');
  if (unknown.length > 0) {
    process.stderr.write(`build: unknown argument ${unknown[0]}; usage: node scripts/build.mjs [--all]\n`);
    return 2;
  }
  const { tsc, version } = compiler();
  // Hashed before compiling: a file edited while tsc runs leaves a stamp that no longer matches.
  const files = sources();
  const hash = sourceHash(files, version);
  if (!all) {
    const reason = staleBecause(files, hash);
    if (reason === undefined) {
      process.stderr.write('build: dist/src is up to date\n');
      return 0;
    }
    process.stderr.write(`build: compiling src/ (${reason})\n`);
  }
  // No stamp while compiling: an interrupted or failed compile never vouches for dist/src.
  rmSync(STAMP, { force: true });
  const status = compile(tsc, all ? 'tsconfig.json' : 'tsconfig.build.json');
  if (status !== 0) return status;
  mkdirSync('dist', { recursive: true });
  writeFileSync(STAMP, `${hash}\n`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
