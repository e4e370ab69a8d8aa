import { type Migration, type MigrationProvider, type MigrationResultSet, Migrator, sql } from 'kysely';
import type { Db, DialectName } from './database.js';
import * as m0001 from './migrations/0001_core.js';
import * as m0002 from './migrations/0002_blogs.js';
import * as m0003 from './migrations/0003_oauth.js';
import * as m0004 from './migrations/0004_search_text.js';
import * as m0005 from './migrations/0005_images.js';
import * as m0007 from './migrations/0007_console.js';
import * as m0008 from './migrations/0008_stored_records.js';
import * as m0009 from './migrations/0009_change_notices.js';
import * as m0010 from './migrations/0010_content_totals.js';
import * as m0011 from './migrations/0011_search_folding.js';
import * as m0012 from './migrations/0012_access_triggers.js';
import * as m0013 from './migrations/0013_credential_default_page.js';
import * as m0014 from './migrations/0014_sort_keys.js';
import * as m0015 from './migrations/0015_image_rules.js';
import * as m0016 from './migrations/0016_change_log.js';
import * as m0017 from './migrations/0017_connection_resource.js';
import * as m0018 from './migrations/0018_webhooks.js';
import * as m0019 from './migrations/0019_webhook_credentials.js';
import * as m0020 from './migrations/0020_image_owners.js';
import * as m0021 from './migrations/0021_text_fold.js';
import * as m0022 from './migrations/0022_trigram_filters.js';
import * as m0023 from './migrations/0023_credential_scopes.js';
import * as m0024 from './migrations/0024_webhook_read_scopes.js';
import * as m0025 from './migrations/0025_record_bytes_flag.js';

interface DialectMigration {
  up(db: Parameters<Migration['up']>[0], dialect: DialectName): Promise<void>;
}

/** In order; names never change once released. */
const MIGRATIONS: Record<string, DialectMigration> = {
  '0001_core': m0001,
  '0002_blogs': m0002,
  '0003_oauth': m0003,
  '0004_search_text': m0004,
  '0005_images': m0005,
  '0007_console': m0007,
  '0008_stored_records': m0008,
  '0009_change_notices': m0009,
  '0010_content_totals': m0010,
  '0011_search_folding': m0011,
  '0012_access_triggers': m0012,
  '0013_credential_default_page': m0013,
  '0014_sort_keys': m0014,
  '0015_image_rules': m0015,
  '0016_change_log': m0016,
  '0017_connection_resource': m0017,
  '0018_webhooks': m0018,
  '0019_webhook_credentials': m0019,
  '0020_image_owners': m0020,
  '0021_text_fold': m0021,
  '0022_trigram_filters': m0022,
  '0023_credential_scopes': m0023,
  '0024_webhook_read_scopes': m0024,
  '0025_record_bytes_flag': m0025,
};

class CodeMigrationProvider implements MigrationProvider {
  constructor(private readonly dialect: DialectName) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    return Object.fromEntries(Object.entries(MIGRATIONS).map(([name, m]) => [name, { up: (db) => settled(m, db, this.dialect) }]));
  }
}

/**
 * Runs one migration and then, on PostgreSQL, the triggers its writes left deferred to the commit
 * (the content totals of 0010). Pending, they would stop the next migration of the same run from
 * altering or indexing the table it wrote: PostgreSQL refuses that while trigger events are
 * pending. Within one migration, its author does the same between a write and such DDL.
 */
export async function settled(migration: DialectMigration, db: Parameters<Migration['up']>[0], dialect: DialectName): Promise<void> {
  await migration.up(db, dialect);
  if (dialect === 'postgres') await sql`set constraints all immediate`.execute(db);
}

/**
 * How many migrations the database has had, as an SQL expression (the migrator's own table, found
 * through the search path as every table is): what a process keeps of the database's contents is
 * out of date once it changes, since a migration may rewrite rows.
 */
export const MIGRATIONS_APPLIED = sql<number>`(select count(*) from kysely_migration)`;

function migratorOf(db: Db): Migrator {
  return new Migrator({
    db: db.kysely,
    provider: new CodeMigrationProvider(db.dialect),
    // Named explicitly: Kysely looks for its tables across all schemas otherwise, and another
    // schema's bookkeeping (a second deployment, a test) would be taken for ours.
    ...(db.schema ? { migrationTableSchema: db.schema } : {}),
  });
}

function applied({ error, results }: MigrationResultSet): string[] {
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Applies pending migrations; safe to run from several processes at once (Kysely takes a lock). */
export async function migrateToLatest(db: Db): Promise<string[]> {
  return applied(await migratorOf(db).migrateToLatest());
}

/** Applies pending migrations up to and including `name`: for tests of a migration on data written before it. */
export async function migrateUpTo(db: Db, name: string): Promise<string[]> {
  return applied(await migratorOf(db).migrateTo(name));
}
