import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import { ConfigError, loadConfig } from '../config.js';
import { createDatabase } from './database.js';

test('SQLite opens in WAL mode and fsyncs every commit unless SQLITE_SYNCHRONOUS=normal', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cms-db-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const pragmas = async (synchronous?: 'full' | 'normal') => {
    const db = createDatabase(`sqlite:${path.join(dir, `${synchronous ?? 'default'}.sqlite`)}`, synchronous ? { synchronous } : {});
    const pragma = async (name: string) => Object.values((await sql.raw(`pragma ${name}`).execute(db.kysely)).rows[0] as object)[0];
    const result = { journal: await pragma('journal_mode'), sync: await pragma('synchronous') };
    await db.close();
    return result;
  };
  assert.deepEqual(await pragmas(), { journal: 'wal', sync: 2 }, 'FULL by default');
  assert.deepEqual(await pragmas('full'), { journal: 'wal', sync: 2 });
  assert.deepEqual(await pragmas('normal'), { journal: 'wal', sync: 1 });

  assert.equal(loadConfig({ DATA_DIR: dir }).sqliteSynchronous, 'full');
  assert.equal(loadConfig({ DATA_DIR: dir, SQLITE_SYNCHRONOUS: 'NORMAL' }).sqliteSynchronous, 'normal');
  assert.throws(() => loadConfig({ DATA_DIR: dir, SQLITE_SYNCHRONOUS: 'off' }), ConfigError);
});
