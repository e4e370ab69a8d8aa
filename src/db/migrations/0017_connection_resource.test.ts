import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { authorizeCode, connect, startOAuthApp } from '../../../test/oauth.helpers.js';
import { revokeConnection } from '../../oauth/connections/connection.service.js';
import type { DbHandle } from '../schema.js';
import { fillResources, markUnexchanged } from './0017_connection_resource.js';

/** Migrations see the database without the service's table types, as the migrator hands it to them. */
const untyped = (db: DbHandle) => db as unknown as Kysely<unknown>;

test('0017 gives connections stored before it their grant’s resource, and makes an unexchanged one pending', async (t) => {
  const a = await startOAuthApp(t);
  const db = a.db.kysely;
  const rows = () => db.selectFrom('oauth_connections').select(['id', 'resource', 'status']).execute();
  const seen = new Set<string>();
  /** The connection the last step made. */
  const made = async () => {
    const id = (await rows()).map((row) => row.id).find((id) => !seen.has(id));
    assert.ok(id);
    seen.add(id);
    return id;
  };
  await connect(a);
  const rest = await made();
  await connect(a, { resource: `${a.base}/mcp` });
  const mcp = await made();
  await authorizeCode(a);
  const unexchanged = await made();
  await connect(a);
  const ended = await made();
  await revokeConnection(db, ended);
  // What connections stored before it have: no resource, and active from consent on.
  await db.updateTable('oauth_connections').set({ resource: null }).execute();
  await db.updateTable('oauth_connections').set({ status: 'active' }).where('status', '=', 'pending').execute();

  await fillResources(untyped(db), 1);
  await markUnexchanged(untyped(db));

  const byId = new Map((await rows()).map((row) => [row.id, row]));
  assert.deepEqual(
    [rest, mcp, unexchanged, ended].map((id) => [byId.get(id)?.resource, byId.get(id)?.status]),
    [
      [a.base, 'active'],
      [`${a.base}/mcp`, 'active'],
      [a.base, 'pending'],
      [null, 'revoked'],
    ],
    'a revoked connection lost its grant, and with it the resource',
  );
});
