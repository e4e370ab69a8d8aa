import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { SERVER_NODE_FLAGS } from './server-flags.js';

const root = path.resolve(import.meta.dirname, '..', '..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
const command = `node ${SERVER_NODE_FLAGS.join(' ')} dist/src/server.js`;

test('npm start, docs/deploy.md and README.md run the server with SERVER_NODE_FLAGS', () => {
  const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>;
  assert.ok(scripts.start?.endsWith(command), `npm start ends with \`${command}\`: ${scripts.start}`);
  for (const doc of ['docs/deploy.md', 'README.md']) {
    assert.ok(read(doc).includes(command), `${doc} shows \`${command}\``);
  }
});
