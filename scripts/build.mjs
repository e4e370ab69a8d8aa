#!/usr/bin/env node
import { spawnSync } from 'node:child_process';
// Compiles the TypeScript into dist/, skipping the compile when nothing it depends on changed.
//
//   node scripts/build.mjs         src/ only, tests excluded (tsconfig.build.json): what `npm start`
//                                  needs. Skipped when dist/src already holds the build of these sources.
//   node scripts/build.mjs --all   src/, test/ and bench/ (tsconfig.json): what the tests and benches
//                                  run. Skipped when dist/ already holds the build of all of them, so
//                                  `npm test` after `npm run build` (CI) starts the tests at once.
//
// Both write the same dist/src files (same compiler options, rootDir and outDir), so a start after a
// test build and a test after a start both find what they need. What makes a skip safe is a stamp
// (dist/.src-build, dist/.all-build): a hash of everything that build reads, written only after a
// compile that succeeded. A build is skipped only when its stamp matches the sources now, every
// source has its .js, and nothing in the folders it writes is newer than the stamp (`npm run dev`, a
// bare `tsc` or the other build rewrote them).
// tsc's own --incremental is not used: its build info cannot see dist/ files another compile
// rewrote, so it could skip files that need writing again.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** Besides the sources: compiler options, the package's module type and the compiler itself. */
const CONFIG_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package.json'];

/** What each build compiles, from which project, and where its stamp is. */
const BUILDS = {
  src: { folders: ['src'], tests: false, project: 'tsconfig.build.json', stamp: path.join('dist', '.src-build') },
  all: { folders: ['src', 'test', 'bench', 'client/src'], tests: true, project: 'tsconfig.json', stamp: path.join('dist', '.all-build') },
};

/** The .ts files under dir (the tests only when asked for), as relative paths, sorted. */
function sources(dir, tests) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) return sources(file, tests);
      return entry.name.endsWith('.ts') && (tests || !entry.name.endsWith('.test.ts')) ? [file] : [];
    })
    .sort();
}

function compiler() {
  const require = createRequire(import.meta.url);
  return { tsc: require.resolve('typescript/bin/tsc'), version: require('typescript/package.json').version };
}

/** One hash over the file names and contents a build reads, and the compiler's version. */
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

/** The folders a build compiles, as its messages name them: "src/, test/, bench/". */
const foldersOf = (build) => build.folders.map((folder) => `${folder}/`).join(', ');

/** Why a build's output needs compiling again, or undefined when it holds the build of these sources. */
function staleBecause(build, files, hash) {
  const what = foldersOf(build);
  if (!existsSync(build.stamp)) return `no build of ${what} yet`;
  if (readFileSync(build.stamp, 'utf8').trim() !== hash) return `${what} changed`;
  const missing = files.find((file) => !file.endsWith('.d.ts') && !existsSync(path.join('dist', file.replace(/\.ts$/, '.js'))));
  if (missing) return `dist/ lacks the build of ${missing}`;
  const stamped = statSync(build.stamp).mtimeMs;
  const rewritten = build.folders.find((folder) => newestUnder(path.join('dist', folder)) > stamped);
  if (rewritten) return `dist/${rewritten} was rewritten by another compile`;
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
  const hashOf = (build) => {
    const files = build.folders.flatMap((folder) => sources(folder, build.tests));
    return { files, hash: sourceHash(files, version) };
  };
  const build = all ? BUILDS.all : BUILDS.src;
  const { files, hash } = hashOf(build);
  const reason = staleBecause(build, files, hash);
  if (reason === undefined) {
    process.stderr.write(`build: ${all ? 'dist/' : 'dist/src'} is up to date\n`);
    return 0;
  }
  process.stderr.write(`build: compiling ${foldersOf(build)} (${reason})\n`);
  // The full build writes dist/src as the src/ build does: it vouches for both.
  const stamps = all
    ? [
        [BUILDS.all.stamp, hash],
        [BUILDS.src.stamp, hashOf(BUILDS.src).hash],
      ]
    : [[BUILDS.src.stamp, hash]];
  // No stamp while compiling: an interrupted or failed compile never vouches for dist/.
  for (const [stamp] of stamps) rmSync(stamp, { force: true });
  const status = compile(tsc, build.project);
  if (status !== 0) return status;
  mkdirSync('dist', { recursive: true });
  for (const [stamp, stampHash] of stamps) writeFileSync(stamp, `${stampHash}\n`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
