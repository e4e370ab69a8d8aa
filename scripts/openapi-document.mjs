#!/usr/bin/env node
// Writes the OpenAPI document the service serves at /api/openapi.json to the file named by the
// first argument (stdout without one), for the linters (npm run lint:openapi). The app is built on
// an empty in-memory database and never listens: the document comes from the route schemas alone.
//
// PUBLIC_URL decides the document's server and OAuth URLs, as it does when served; it defaults to
// an https address, as a deployment's is (http is for a laptop).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp } from '../dist/src/app.js';
import { loadConfig } from '../dist/src/config.js';
import { createDatabase } from '../dist/src/db/database.js';
import { migrateToLatest } from '../dist/src/db/migrate.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'cms-openapi-'));
try {
  const config = loadConfig({
    PUBLIC_URL: process.env.PUBLIC_URL || 'https://cms.example.net',
    DATA_DIR: dataDir,
    DATABASE_URL: 'sqlite::memory:',
    COOKIE_SECRETS: 'x'.repeat(32),
    LOG_LEVEL: 'silent',
    DEMO_DATA: 'false',
  });
  const db = createDatabase(config.databaseUrl);
  await migrateToLatest(db);
  const app = await buildApp({ config, db });
  await app.ready();
  const text = `${JSON.stringify(app.swagger(), null, 2)}\n`;
  await app.close();
  await db.close();
  if (process.argv[2]) writeFileSync(process.argv[2], text);
  else process.stdout.write(text);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
