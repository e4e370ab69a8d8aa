#!/usr/bin/env node
// Lints the OpenAPI document the service serves (npm run lint:openapi, run by CI after the build):
//
//   Redocly `recommended` (redocly.yaml): no error and no warning;
//   Spectral `spectral:oas` (.spectral.yaml): no problem of any severity;
//   Spectral's OWASP ruleset (.spectral.yaml): no error. The rules broken on purpose are off there,
//   each with its reason (docs/api.md lists them); its warnings are printed, counted, and pass.
//
// The document is written by scripts/openapi-document.mjs from dist/ (build first). Both tools run
// offline: Redocly's telemetry and update check are switched off.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const bin = (name) => path.join('node_modules', '.bin', name);
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };

function run(command, args) {
  const result = spawnSync(command, args, { env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw result.error;
  return result;
}

/** The JSON a linter printed; its own failure (no JSON at all) stops the lint with what it said. */
function parsed(result, tool) {
  try {
    return JSON.parse(result.stdout);
  } catch {
    process.stderr.write(`${tool} did not answer JSON (exit ${result.status}):\n${result.stdout}${result.stderr}`);
    process.exit(1);
  }
}

function countBy(items, key) {
  const counts = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));
}

const dir = mkdtempSync(path.join(tmpdir(), 'cms-openapi-lint-'));
const document = path.join(dir, 'openapi.json');
let failed = false;
try {
  const written = run(process.execPath, ['scripts/openapi-document.mjs', document]);
  if (written.status !== 0) {
    process.stderr.write(written.stderr);
    process.exit(written.status ?? 1);
  }

  const redocly = parsed(run(bin('redocly'), ['lint', document, '--config', 'redocly.yaml', '--format=json']), 'Redocly');
  const { errors, warnings } = redocly.totals;
  console.log(`Redocly recommended: ${errors} errors, ${warnings} warnings`);
  for (const problem of redocly.problems) {
    const where = problem.location?.[0]?.pointer ?? '';
    console.log(`  ${problem.severity} ${problem.ruleId} ${where}: ${problem.message}`);
  }
  if (errors + warnings > 0) failed = true;

  const results = parsed(run(bin('spectral'), ['lint', document, '--ruleset', '.spectral.yaml', '--format=json', '--quiet']), 'Spectral');
  const SEVERITY = ['error', 'warning', 'info', 'hint'];
  const owasp = results.filter((r) => r.code.startsWith('owasp:'));
  const oas = results.filter((r) => !r.code.startsWith('owasp:'));
  console.log(`Spectral spectral:oas: ${oas.length} problems`);
  for (const r of oas) console.log(`  ${SEVERITY[r.severity]} ${r.code} ${r.path.join('.')}: ${r.message}`);
  const owaspErrors = owasp.filter((r) => r.severity === 0);
  console.log(`Spectral OWASP: ${owaspErrors.length} errors, ${owasp.length - owaspErrors.length} warnings and hints`);
  for (const r of owaspErrors) console.log(`  error ${r.code} ${r.path.join('.')}: ${r.message}`);
  for (const [rule, count] of countBy(owasp, (r) => `${SEVERITY[r.severity]} ${r.code}`)) console.log(`  ${count} ${rule}`);
  if (oas.length > 0 || owaspErrors.length > 0) failed = true;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (failed) {
  console.error('FAILED: the OpenAPI document does not pass its linters (redocly.yaml, .spectral.yaml)');
  process.exit(1);
}
