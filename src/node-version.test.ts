import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { MINIMUM_NODE, unsupportedNode } from './node-version.js';
import { packageFileAbove } from './reference/package-version.js';

test('a Node.js older than the minimum gets one line naming it, the versions needed and how to get one; a supported one none', () => {
  const message = unsupportedNode('v20.20.2');
  assert.match(message!, /needs Node\.js 22\.12 or later .*this is Node\.js v20\.20\.2\. Start it with `npm start`/);
  assert.ok(unsupportedNode('v22.11.0'), '22.11 is below the minimum');
  for (const supported of ['v22.12.0', 'v22.23.3', 'v24.21.0', 'v26.0.0']) assert.equal(unsupportedNode(supported), undefined, supported);
});

test("the minimum is package.json's engines, and every entry point imports the check before anything else", () => {
  const manifest = packageFileAbove(import.meta.url);
  const engines = (JSON.parse(readFileSync(manifest, 'utf8')) as { engines: { node: string } }).engines.node;
  assert.equal(engines, `>=${MINIMUM_NODE.major}.${MINIMUM_NODE.minor}.0`);
  for (const [entry, specifier] of [
    ['server.js', './node-version.js'],
    ['cli/main.js', '../node-version.js'],
  ] as const) {
    const source = readFileSync(new URL(`./${entry}`, import.meta.url), 'utf8');
    const firstImport = source.split('\n').find((line) => line.startsWith('import '));
    assert.equal(firstImport, `import '${specifier}';`, `${entry} imports the check first`);
  }
});
