import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { createEmptyPostgresDatabase, TEST_DATABASE_URL } from '../../test/helpers.js';
import { migrateToLatest } from './migrate.js';

test('nodes migrating an empty PostgreSQL database at once apply each migration exactly once', {
  skip: TEST_DATABASE_URL ? false : 'PostgreSQL only (set TEST_DATABASE_URL): one SQLite file has one node',
}, async (t) => {
  const database = await createEmptyPostgresDatabase(t);
  // Separate pools, as separate processes would have: the lock must hold between connections.
  const nodes = Array.from({ length: 4 }, () => database.open());

  const applied = await Promise.all(nodes.map((db) => migrateToLatest(db)));

  const [db] = nodes;
  const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db!.kysely);
  const recorded = rows.map((row) => row.name);
  assert.ok(recorded.length > 0);
  assert.deepEqual(applied.flat().sort(), recorded, 'every recorded migration was applied by one node, none by two');
  assert.equal(applied.filter((names) => names.length > 0).length, 1, 'one node did the work; the others found it done');
  assert.deepEqual(await migrateToLatest(db!), [], 'and a later start finds nothing to do');
});
