import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadConfig } from './config.js';
import { SETTINGS, settingsTable } from './settings.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** Read outside loadConfig: server.ts hands it to the demo seed, the only place it matters. */
const READ_ELSEWHERE = ['DEMO_PASSWORD'];

/** The names loadConfig asks the environment for, with `given` set and every other one unset. */
function namesRead(given: Record<string, string>): Set<string> {
  const read = new Set<string>();
  const env = new Proxy(given, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return target[name as string];
    },
  });
  loadConfig(env);
  return read;
}

test("the README's Configuration table is the settings table (src/settings.ts), row for row", () => {
  const start = README.indexOf('| Variable | Default |');
  assert.ok(start > 0, 'the README has a Configuration table');
  const end = README.indexOf('\n\n', start);
  const documented = README.slice(start, end);
  assert.equal(documented, settingsTable(), 'paste settingsTable() (src/settings.ts) over the README table');
});

test('loadConfig reads every declared setting and nothing undeclared', () => {
  // An in-memory database and given cookie secrets: loading writes no secret to DATA_DIR.
  const read = namesRead({ DATABASE_URL: 'sqlite::memory:', COOKIE_SECRETS: 'x'.repeat(32) });
  const declared = new Set(SETTINGS.map((setting) => setting.name));
  assert.equal(declared.size, SETTINGS.length, 'each setting is declared once');
  for (const name of read) assert.ok(declared.has(name), `${name} is read by loadConfig and declared in SETTINGS`);
  for (const name of declared) {
    assert.ok(read.has(name) || READ_ELSEWHERE.includes(name), `${name} is declared in SETTINGS and read by loadConfig`);
  }
});

test('every declared default is a value the setting accepts, and a whole number has a range that holds it', () => {
  const defaults = Object.fromEntries(SETTINGS.filter((s) => s.default !== undefined).map((s) => [s.name, s.default ?? '']));
  assert.doesNotThrow(() => loadConfig({ ...defaults, DATABASE_URL: 'sqlite::memory:', COOKIE_SECRETS: 'x'.repeat(32) }));
  for (const { name, range, default: value } of SETTINGS) {
    if (!range) continue;
    assert.ok(range[0] <= Number(value) && Number(value) <= range[1], `${name}'s default ${value} is within ${range.join('–')}`);
  }
});
