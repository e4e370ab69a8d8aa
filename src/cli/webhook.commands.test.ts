import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addTestSite, CHANGE_LOG, createTestDatabase } from '../../test/helpers.js';
import { testConfig } from '../config.js';
import type { Db } from '../db/database.js';
import { ValidationError } from '../errors.js';
import { parseArguments } from './command.js';
import { COMMANDS } from './commands.js';

/** `cms webhook <word> …` on the test's database, private targets allowed; resolves with what it prints. */
async function cms(db: Db, ...words: string[]): Promise<string> {
  const command = COMMANDS.find((c) => c.name === `${words[0]} ${words[1]}`);
  assert.ok(command, words.join(' '));
  const { values, positionals } = parseArguments(command, words.slice(2));
  const config = () => testConfig({ webhooks: { ...testConfig().webhooks, allowPrivateTargets: true } });
  const result = await command.run({
    json: values.json === true,
    values,
    positionals,
    config,
    db: async () => db,
    changeLog: async () => CHANGE_LOG,
  });
  assert.ok(result);
  return values.json === true ? JSON.stringify(result.json) : result.text;
}

test('cms webhook create shows the secret once; list shows the hooks without it; delete removes one', async (t) => {
  const db = await createTestDatabase(t);
  const site = await addTestSite(db);
  const created = JSON.parse(
    await cms(
      db,
      'webhook',
      'create',
      '--site',
      String(site.siteId),
      '--url',
      'http://127.0.0.1:9/hook',
      '--events',
      'page.created, blog.created',
      '--json',
    ),
  );
  assert.match(created.secret, /^whsec_/);
  assert.deepEqual(created.events, ['page.created', 'blog.created']);
  const text = await cms(db, 'webhook', 'list', '--site', String(site.siteId));
  assert.match(text, /http:\/\/127\.0\.0\.1:9\/hook/);
  assert.doesNotMatch(text, /whsec_/);
  await assert.rejects(
    cms(db, 'webhook', 'create', '--site', String(site.siteId), '--url', 'http://127.0.0.1:9/', '--events', 'nope'),
    ValidationError,
  );
  assert.equal(await cms(db, 'webhook', 'delete', String(created.id), '--site', String(site.siteId)), `Deleted webhook ${created.id}.`);
  assert.deepEqual(JSON.parse(await cms(db, 'webhook', 'list', '--site', String(site.siteId), '--json')).webhooks, []);
});
