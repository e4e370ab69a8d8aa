import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { createCredential, createSite } from '../src/accounts/account.service.js';
import { lowerPasswordCostForTests } from '../src/accounts/secrets.js';
import { buildApp } from '../src/app.js';
import type { PrincipalCache } from '../src/auth/principal-cache.js';
import { type Config, testConfig } from '../src/config.js';
import { createDatabase, type DatabaseOptions, type Db } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import type { OutboundFetch, OutboundGuard } from '../src/http/outbound.js';
import type { ImageProcessor } from '../src/storage/image-processor.js';
import { changeLogWithWebhooks } from '../src/webhooks/webhook.outbox.js';
import { checkResponses } from './response-contract.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

// Passwords made by a test process are hashed cheaply: scrypt at full cost was most of the time of
// every test that creates a user or signs in, and no test checks the cost itself.
lowerPasswordCostForTests();

export interface OwnDatabase {
  readonly name: string;
  readonly url: string;
  /** A connection to the test server's own database, open until the test's end (then the database is dropped). */
  readonly admin: pg.Client;
}

/**
 * A PostgreSQL database of its own on the test server (TEST_DATABASE_URL), named `prefix_…`, for
 * a server process that runs in `public` as in production; dropped after the test.
 */
export async function ownPostgresDatabase(t: TestContext, prefix: string): Promise<OwnDatabase> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  t.after(async () => {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  });
  const url = new URL(TEST_DATABASE_URL as string);
  url.pathname = `/${name}`;
  return { name, url: url.href, admin };
}

/** A folder of its own for one test (a server's DATA_DIR, say), removed afterwards. */
export async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cms-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The test's database twice, as two nodes (or a node and a CLI process) open it: a PostgreSQL
 * schema of its own (TEST_DATABASE_URL), or else a SQLite file, migrated.
 */
export async function secondHandle(t: TestContext): Promise<{ first: Db; second: Db }> {
  if (TEST_DATABASE_URL) {
    const first = await createTestDatabase(t);
    const second = createDatabase(TEST_DATABASE_URL, { schema: first.schema!, poolSize: 2 });
    t.after(() => second.close());
    return { first, second };
  }
  const file = `sqlite:${path.join(await tempDir(t), 'cms.sqlite')}`;
  const first = createDatabase(file);
  await migrateToLatest(first);
  const second = createDatabase(file);
  t.after(async () => {
    await second.close();
    await first.close();
  });
  return { first, second };
}

export interface TestSite {
  siteId: number;
  apiId: string;
  apiKey: string;
  /** HTTP Basic credentials of the site's API key. */
  headers: Record<string, string>;
}

export interface TestApp {
  app: FastifyInstance;
  db: Db;
  config: Config;
  /** A website with an API credential, made for this test. */
  site: TestSite;
  addSite(name?: string): Promise<TestSite>;
}

/**
 * A fresh database for one test: in-memory SQLite, or (with TEST_DATABASE_URL) a PostgreSQL
 * schema to itself, migrated and empty apart from what the caller adds.
 */
export async function createTestDatabase(t: TestContext, options: Pick<DatabaseOptions, 'log'> = {}): Promise<Db> {
  if (!TEST_DATABASE_URL) {
    const db = createDatabase('sqlite::memory:', options);
    await migrateToLatest(db);
    t.after(() => db.close());
    return db;
  }
  const schema = await takeEmptySchema();
  // Room for the tests that send several writes at once (six concurrent inserts, four feed
  // writers): with fewer connections than requests, the ones waiting for a connection got a 503
  // after the pool's 5 s wait on a loaded CI machine, which is the service's backpressure, not
  // what those tests check.
  const db = createDatabase(TEST_DATABASE_URL, { ...options, schema: schema.name, poolSize: 8 });
  t.after(async () => {
    await db.close();
    await giveBackSchema(schema);
  });
  return db;
}

/**
 * The PostgreSQL schemas of this test process. Migrating a schema is slow, under a lock all test
 * processes share, and most tests need one: so a schema a test is done with is emptied and
 * handed to the next test of the same process, unless the test changed its tables,
 * columns or triggers, which a migration test may do: then it is dropped. The migrations leave
 * every table empty on an empty database (their inserts only copy existing rows), so an emptied
 * schema is a fresh one: every row is deleted (triggers and foreign keys off, replica role), every
 * sequence restarts, so ids start at 1 again, and the tables written to are vacuumed, which gives
 * their emptied pages back: the planner reads a table's size from its pages, and the query-plan
 * tests expect the plans of empty tables. (TRUNCATE would do both, but it makes new files for
 * every table, which cost more than most tests.) The schemas still waiting are dropped when the
 * process has nothing left to do (beforeExit), in a test file or in a script that imports these
 * helpers.
 */
interface TestSchema {
  readonly name: string;
  /** The shape of the schema as migrated: its relations, columns and triggers. */
  readonly shape: string;
}

const emptySchemas: TestSchema[] = [];

/**
 * The process's one connection for schema work, opened at its first use: a new connection's first
 * catalog queries are slow. Its socket keeps the process alive only while work is under way, so
 * a process whose tests are done still reaches beforeExit, which drops the schemas left and
 * closes it.
 */
let admin: Promise<pg.Client> | undefined;
let working = 0;

function adminSocket(client: pg.Client): Socket {
  return (client as unknown as { connection: { stream: Socket } }).connection.stream;
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  admin ??= (async () => {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    client.on('error', () => {
      admin = undefined;
    });
    await client.connect();
    return client;
  })();
  const client = await admin;
  if (working++ === 0) adminSocket(client).ref();
  try {
    return await work(client);
  } finally {
    if (--working === 0) adminSocket(client).unref();
  }
}

if (TEST_DATABASE_URL) {
  process.once('beforeExit', () => {
    if (!admin) return;
    const left = emptySchemas.splice(0);
    withAdmin(async (client) => {
      for (const schema of left) await dropSchema(client, schema);
    })
      .then(async () => (await admin)?.end())
      .catch((error: unknown) => console.error('could not drop the test schemas', left.map((schema) => schema.name).join(', '), error));
  });
}

async function schemaShape(client: pg.Client, schema: string): Promise<string> {
  const { rows } = await client.query<{ shape: string }>(
    `select md5(coalesce(string_agg(item, ',' order by item), '')) as shape from (
       select c.relname || '.' || c.relkind::text || '.' || coalesce(a.attname || ':' || a.atttypid::regtype::text, '') as item
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
         left join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        where n.nspname = $1
       union all
       select 'trigger ' || tg.tgname || ' on ' || c.relname
         from pg_trigger tg join pg_class c on c.oid = tg.tgrelid join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = $1 and not tg.tgisinternal
     ) items`,
    [schema],
  );
  return rows[0]?.shape ?? '';
}

async function takeEmptySchema(): Promise<TestSchema> {
  const reused = emptySchemas.pop();
  if (reused) return reused;
  const name = `t_${randomBytes(6).toString('hex')}`;
  return withAdmin(async (client) => {
    const db = createDatabase(TEST_DATABASE_URL as string, { schema: name, poolSize: 1 });
    try {
      // Kysely's migrator inspects every schema's tables; a schema dropped meanwhile by another
      // test process makes that inspection fail. Creating, migrating and dropping take turns.
      await underSchemaLock(client, async () => {
        await client.query(`create schema ${name}`);
        await migrateToLatest(db);
      });
    } catch (error) {
      await db.close();
      await dropSchema(client, { name, shape: '' });
      throw error;
    }
    await db.close();
    return { name, shape: await schemaShape(client, name) };
  });
}

async function giveBackSchema(schema: TestSchema): Promise<void> {
  await withAdmin(async (client) => {
    if ((await schemaShape(client, schema.name)) !== schema.shape) {
      await dropSchema(client, schema);
      return;
    }
    // A table's pages stay after a DELETE, so its size now says whether the test wrote to it.
    const { rows } = await client.query<{ name: string; kind: 'table' | 'written' | 'sequence' }>(
      `select format('%I.%I', schemaname, tablename) as name,
              case when pg_relation_size(format('%I.%I', schemaname, tablename)) > 0 then 'written' else 'table' end as kind
         from pg_tables where schemaname = $1 and tablename not like 'kysely\\_migration%'
       union all
       select format('%I.%I', schemaname, sequencename), 'sequence' from pg_sequences where schemaname = $1`,
      [schema.name],
    );
    const named = (...kinds: string[]) => rows.filter((row) => kinds.includes(row.kind)).map((row) => row.name);
    await client.query(
      [
        'begin',
        'set local session_replication_role = replica',
        ...named('table', 'written').map((table) => `delete from ${table}`),
        ...named('sequence').map((sequence) => `alter sequence ${sequence} restart`),
        'commit',
      ].join('; '),
    );
    const written = named('written');
    if (written.length > 0) await client.query(`vacuum ${written.join(', ')}`);
    emptySchemas.push(schema);
  });
}

function dropSchema(client: pg.Client, schema: TestSchema): Promise<unknown> {
  return underSchemaLock(client, () => client.query(`drop schema if exists ${schema.name} cascade`));
}

/**
 * An empty PostgreSQL database of its own on TEST_DATABASE_URL's server, dropped afterwards (with
 * whatever is still connected to it): for what a schema cannot isolate, such as processes racing
 * to migrate an empty database, whose migrator looks at every schema's tables. `open` gives a
 * handle on it, closed before the drop.
 */
export async function createEmptyPostgresDatabase(t: TestContext): Promise<{ url: string; open(poolSize?: number): Db }> {
  if (!TEST_DATABASE_URL) throw new Error('createEmptyPostgresDatabase needs TEST_DATABASE_URL');
  const name = `cms_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } catch (error) {
    await admin.end();
    throw error;
  }
  const opened: Db[] = [];
  t.after(async () => {
    try {
      await Promise.all(opened.map((db) => db.close()));
      await admin.query(`drop database if exists ${name} with (force)`);
    } finally {
      await admin.end();
    }
  });
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    open(poolSize = 2) {
      const db = createDatabase(url.href, { poolSize });
      opened.push(db);
      return db;
    },
  };
}

const SCHEMA_LOCK = 424242;

// The advisory lock is the session's, and this process's schema work shares one session, where
// the lock is re-entrant: the process's own turns also go one at a time, in this chain.
let schemaTurn: Promise<unknown> = Promise.resolve();

function underSchemaLock<T>(admin: pg.Client, work: () => Promise<T>): Promise<T> {
  const turn = schemaTurn.then(async () => {
    await admin.query('select pg_advisory_lock($1)', [SCHEMA_LOCK]);
    try {
      return await work();
    } finally {
      await admin.query('select pg_advisory_unlock($1)', [SCHEMA_LOCK]);
    }
  });
  schemaTurn = turn.catch(() => undefined);
  return turn;
}

export async function addTestSite(db: Db, name = 'Test site'): Promise<TestSite> {
  const site = await createSite(db.kysely, name);
  const credential = await createCredential(db.kysely, site.id, 'test');
  return {
    siteId: site.id,
    apiId: credential.apiId,
    apiKey: credential.apiKey,
    headers: { authorization: `Basic ${Buffer.from(`${credential.apiId}:${credential.apiKey}`).toString('base64')}` },
  };
}

/**
 * The change log with the webhook outbox, as the app wires it: what a test hands the services it
 * calls directly, so their writes are logged and delivered as the app's are.
 */
export const CHANGE_LOG = changeLogWithWebhooks();

export async function buildTestApp(
  t: TestContext,
  options: {
    config?: Partial<Config>;
    db?: Db;
    principals?: PrincipalCache;
    processor?: ImageProcessor;
    webhookGuard?: OutboundGuard;
    metadataDocumentFetch?: OutboundFetch;
  } = {},
): Promise<TestApp> {
  const db = options.db ?? (await createTestDatabase(t));
  const config = testConfig(options.config);
  const app = await buildApp({
    config,
    db,
    ...(options.principals ? { principals: options.principals } : {}),
    ...(options.processor ? { processor: options.processor } : {}),
    ...(options.webhookGuard ? { webhookGuard: options.webhookGuard } : {}),
    ...(options.metadataDocumentFetch ? { metadataDocumentFetch: options.metadataDocumentFetch } : {}),
  });
  checkResponses(app);
  t.after(() => app.close());
  const site = await addTestSite(db);
  return { app, db, config, site, addSite: (name) => addTestSite(db, name) };
}

/** JSON body of an inject response, typed loosely for assertions. */
// biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
export function json(response: { body: string }): any {
  return JSON.parse(response.body);
}

/** Whether a Redis (or anything) accepts connections at this redis:// URL, within a second. */
/** The Redis tests use (TEST_REDIS_URL, or the local one); undefined, with the test skipped, when none answers. */
export async function testRedis(t: TestContext): Promise<string | undefined> {
  const url = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  if (await redisAnswers(url)) return url;
  t.skip('no Redis at TEST_REDIS_URL or 127.0.0.1:6379');
  return undefined;
}

export function redisAnswers(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port || 6379), timeout: 1000 });
    const answer = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => answer(true));
    socket.once('error', () => answer(false));
    socket.once('timeout', () => answer(false));
  });
}
