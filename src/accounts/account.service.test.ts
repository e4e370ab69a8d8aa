import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers.js';
import { ConflictError } from '../errors.js';
import { createUser } from './account.service.js';

test('parallel creates of one e-mail make one user with one website; the others are 409s saying how to add the website', async (t) => {
  const a = await buildTestApp(t);
  const db = a.db.kysely;
  const results = await Promise.allSettled(
    Array.from({ length: 8 }, () => createUser(db, { email: 'Same@Example.com', password: 'long enough', siteId: a.site.siteId })),
  );
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  for (const r of results) {
    if (r.status === 'rejected') {
      assert.ok(r.reason instanceof ConflictError, String(r.reason));
      assert.match(r.reason.message, /exists already; give them another website with: cms user add-site --email same@example.com/);
    }
  }
  const users = await db.selectFrom('users').select('id').where('email', '=', 'same@example.com').execute();
  assert.equal(users.length, 1);
  const memberships = await db.selectFrom('site_users').select('site_id').where('user_id', '=', users[0]!.id).execute();
  assert.deepEqual(memberships, [{ site_id: a.site.siteId }]);
});
