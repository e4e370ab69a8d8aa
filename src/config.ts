import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { type CorsOrigins, corsOriginsOf, publicUrlOf, type TrustProxy, trustProxyOf } from './address-settings.js';
import { ConfigError } from './config-error.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-files.js';
import { settingOf } from './settings.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * The settings, parsed. What each variable means, its default and its range are declared once, in
 * SETTINGS (src/settings.ts); a field's comment here names its variable and what the code must know.
 */
export interface Config {
  /** {base_url}: the public address of the API; {auth_url} is this + /api/auth. */
  readonly publicUrl: string;
  readonly host: string;
  readonly port: number;
  /** Folder for the SQLite file, uploaded images and generated secrets. */
  readonly dataDir: string;
  /** `sqlite:<file>` / `:memory:` or a postgres:// URL. */
  readonly databaseUrl: string;
  /** PostgreSQL only: the most connections one process opens (DATABASE_POOL_SIZE). */
  readonly databasePoolSize: number;
  /** Processes that serve requests (WORKERS; its 0 is the available cores). */
  readonly workers: number;
  readonly redisUrl: string | undefined;
  /** Starts every Redis key, so that several deployments can share one Redis. */
  readonly redisKeyPrefix: string;
  /**
   * Which proxies' X-Forwarded-For/-Proto/-Host to believe: none (the client is the socket's
   * address), the number of proxy hops in front, or the proxies' addresses and CIDR ranges.
   */
  readonly trustProxy: TrustProxy;
  /** SQLITE_SYNCHRONOUS. */
  readonly sqliteSynchronous: 'full' | 'normal';
  /** SQLITE_MMAP_MB, in megabytes; 0 turns the memory map off. */
  readonly sqliteMmapMB: number;
  /** KEEP_CREDENTIALS: whether app.ts builds a PrincipalCache (src/auth/principal-cache.ts). */
  readonly keepCredentials: boolean;
  /** LEGACY_QUERY_CREDENTIALS: API credentials accepted as the query parameters apiID and apiKey. */
  readonly legacyQueryCredentials: boolean;
  readonly cookieSecrets: readonly string[];
  readonly logLevel: LogLevel;
  /** How long a client may take, in milliseconds (docs/deploy.md, Timeouts). */
  readonly http: {
    /** A connection that waits for its client, silent both ways this long, is closed (HTTP_IDLE_TIMEOUT_SECONDS; http/idle-timeout.ts). */
    readonly idleTimeoutMs: number;
    /** A request's headers and body must all arrive within this, or it is answered 408 (HTTP_REQUEST_TIMEOUT_SECONDS). */
    readonly requestTimeoutMs: number;
    /** A kept-alive connection waits this long for the next request (HTTP_KEEP_ALIVE_TIMEOUT_SECONDS). */
    readonly keepAliveTimeoutMs: number;
  };
  readonly uploads: {
    readonly maxFileBytes: number;
    readonly maxFiles: number;
    /** Largest image accepted, in pixels, read from its header before decoding (UPLOAD_MAX_PIXELS). */
    readonly maxPixels: number;
  };
  readonly images: {
    /** `local`: files in DATA_DIR/images. `database`: rows in the database, for nodes without a shared disk. */
    readonly storage: ImageStorageKind;
    /**
     * The start-up sweep removes staged uploads and unreferenced images only when older than this:
     * younger ones may belong to an upload another node is still writing or committing.
     */
    readonly cleanupGraceMs: number;
  };
  /**
   * Days of change history kept (HISTORY_DAYS): older changes and revisions are removed, except the
   * latest revision of each record that exists (docs/history.md).
   */
  readonly historyDays: number;
  /** Work on image pixels: uploads under their page's rules, and sizes and formats made on request. */
  readonly imageProcessing: {
    /** Images processed at once per process; each holds its file and decoded pixels (IMAGE_PROCESSING_CONCURRENCY). */
    readonly concurrency: number;
    /** Sizes and formats made on request kept per image, least recently used dropped (IMAGE_VARIANTS_PER_IMAGE). */
    readonly variantsPerImage: number;
    /** Bytes of one image's kept variants (IMAGE_VARIANT_CACHE_MB_PER_IMAGE). */
    readonly variantCacheBytesPerImage: number;
    /** Bytes of all kept variants together (IMAGE_VARIANT_CACHE_MB). */
    readonly variantCacheBytes: number;
    /** Variants made at once per process, in a pool apart from uploads' (IMAGE_VARIANT_CONCURRENCY). */
    readonly variantConcurrency: number;
    /** Variant requests waiting for that pool at most; more are answered 503 at once (IMAGE_VARIANT_QUEUE). */
    readonly variantQueue: number;
    /** New sizes and formats one client address may have made per minute (RATE_LIMIT_IMAGE_VARIANTS); 0 is no limit. */
    readonly variantsPerMinute: number;
  };
  readonly oauth: {
    readonly dynamicRegistration: boolean;
    /** Accept https URL client_ids described by a Client ID Metadata Document (MCP clients use them). */
    readonly clientMetadataDocuments: boolean;
  };
  /** Requests per minute; 0 switches a limit off. */
  readonly rateLimits: {
    /** Per credential (API key or OAuth connection) on the content API. */
    readonly api: number;
    /** Per OAuth client and, separately, per IP address on the token, revocation and registration endpoints. */
    readonly token: number;
  };
  /**
   * Which origins' browser apps may call the API, MCP and OAuth endpoints (CORS_ORIGINS): `*` for
   * any, or a list of exact origins (`https://app.example`). src/http/cors.ts applies it.
   */
  readonly corsOrigins: CorsOrigins;
  /** Create the demo website on an empty database. */
  readonly demo: boolean;
  /** Outgoing webhooks (docs/webhooks.md). */
  readonly webhooks: WebhookConfig;
}

export interface WebhookConfig {
  /**
   * Development and tests only (WEBHOOK_ALLOW_PRIVATE_TARGETS): hooks may point at loopback and
   * private addresses, and at those over plain http. Off, every target is a public https address.
   */
  readonly allowPrivateTargets: boolean;
  /** Seconds between a failed attempt and the next, one entry per retry, jittered (WEBHOOK_RETRY_SCHEDULE). */
  readonly retrySchedule: readonly number[];
  /** Attempts in flight at once in one process (WEBHOOK_CONCURRENCY)… */
  readonly concurrency: number;
  /** …and to one hook (WEBHOOK_CONCURRENCY_PER_HOOK), so a slow receiver cannot take every slot… */
  readonly concurrencyPerHook: number;
  /**
   * …and to one website's hooks (WEBHOOK_CONCURRENCY_PER_SITE): its share of the slots, so that a
   * website whose receivers hang holds that many and the others' deliveries go on (docs/webhooks.md).
   */
  readonly concurrencyPerSite: number;
  /** How often each process looks for deliveries due, in milliseconds (WEBHOOK_POLL_MS). */
  readonly pollMs: number;
}

/** Blank (spaces only, too) is the default schedule. */
function retryScheduleOf(env: NodeJS.ProcessEnv): readonly number[] {
  const given = env.WEBHOOK_RETRY_SCHEDULE;
  const raw = given?.trim() ? given : (settingOf('WEBHOOK_RETRY_SCHEDULE').default ?? '');
  const entries = raw.split(',').map((entry) => entry.trim());
  if (entries.some((entry) => !/^\d+(\.\d+)?$/.test(entry)) || entries.length > 20) {
    throw new ConfigError(`WEBHOOK_RETRY_SCHEDULE must be up to 20 comma-separated numbers of seconds, got "${raw}"`);
  }
  return Object.freeze(entries.map(Number));
}

export type ImageStorageKind = 'local' | 'database';

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** A megabyte as the MB settings mean it (MiB). */
const MB = 1024 * 1024;

/** The variable's value, or its declared default when it is unset or empty. */
function text(env: NodeJS.ProcessEnv, name: string): string {
  const raw = env[name];
  return raw === undefined || raw === '' ? (settingOf(name).default ?? '') : raw;
}

function integer(env: NodeJS.ProcessEnv, name: string): number {
  const { range } = settingOf(name);
  if (!range) throw new Error(`${name} is declared without a range in SETTINGS`);
  const [min, max] = range;
  const raw = text(env, name);
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = text(env, name).toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

function databaseUrlOf(raw: string | undefined, dataDir: string): string {
  if (raw === undefined || raw === '') return `sqlite:${path.join(dataDir, 'cms.sqlite')}`;
  if (/^postgres(ql)?:\/\//.test(raw) || raw.startsWith('sqlite:')) return raw;
  throw new ConfigError('DATABASE_URL must be postgres://… or sqlite:<file>, got an unsupported value');
}

/**
 * Cookie secrets sign the authorization server's cookies. When none are configured they are
 * generated once and kept in DATA_DIR, so a first start needs no set-up and restarts keep sessions.
 */
function cookieSecretsOf(raw: string | undefined, dataDir: string, persist: boolean): string[] {
  if (raw) {
    const secrets = raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (secrets.some((s) => s.length < 32)) throw new ConfigError('each COOKIE_SECRETS entry needs 32 characters or more');
    return secrets;
  }
  if (!persist) return [randomBytes(32).toString('base64url')];
  const file = path.join(dataDir, 'cookie-secret');
  if (existsSync(file)) return [readFileSync(file, 'utf8').trim()];
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: PRIVATE_FILE_MODE });
  return [secret];
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT');
  const dataDir = path.resolve(text(env, 'DATA_DIR'));
  const databaseUrl = databaseUrlOf(env.DATABASE_URL, dataDir);
  const logLevel = text(env, 'LOG_LEVEL') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const redisUrl = env.REDIS_URL || undefined;
  const sqliteSynchronous = text(env, 'SQLITE_SYNCHRONOUS').toLowerCase();
  if (sqliteSynchronous !== 'full' && sqliteSynchronous !== 'normal') throw new ConfigError('SQLITE_SYNCHRONOUS must be full or normal');
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new ConfigError('REDIS_URL must be redis://… or rediss://…');
  const imageStorage = text(env, 'IMAGE_STORAGE').toLowerCase();
  if (imageStorage !== 'local' && imageStorage !== 'database') throw new ConfigError('IMAGE_STORAGE must be local or database');
  // Set but empty is no prefix, not the default.
  const redisKeyPrefix = env.REDIS_KEY_PREFIX ?? text(env, 'REDIS_KEY_PREFIX');
  if (!/^[\w:.-]{0,64}$/.test(redisKeyPrefix)) throw new ConfigError('REDIS_KEY_PREFIX may hold up to 64 letters, digits and _ : . -');
  return Object.freeze({
    publicUrl: publicUrlOf(env.PUBLIC_URL || `http://localhost:${port || 8080}`),
    host: text(env, 'HOST'),
    port,
    dataDir,
    databaseUrl,
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE'),
    workers: integer(env, 'WORKERS') || availableParallelism(),
    redisUrl,
    redisKeyPrefix,
    trustProxy: trustProxyOf(text(env, 'TRUST_PROXY')),
    sqliteSynchronous,
    sqliteMmapMB: integer(env, 'SQLITE_MMAP_MB'),
    keepCredentials: flag(env, 'KEEP_CREDENTIALS'),
    legacyQueryCredentials: flag(env, 'LEGACY_QUERY_CREDENTIALS'),
    cookieSecrets: Object.freeze(
      cookieSecretsOf(env.COOKIE_SECRETS, dataDir, databaseUrl.startsWith('sqlite:') && !databaseUrl.endsWith(':memory:')),
    ),
    logLevel,
    http: Object.freeze({
      idleTimeoutMs: integer(env, 'HTTP_IDLE_TIMEOUT_SECONDS') * 1000,
      requestTimeoutMs: integer(env, 'HTTP_REQUEST_TIMEOUT_SECONDS') * 1000,
      keepAliveTimeoutMs: integer(env, 'HTTP_KEEP_ALIVE_TIMEOUT_SECONDS') * 1000,
    }),
    uploads: Object.freeze({
      maxFileBytes: integer(env, 'UPLOAD_MAX_FILE_BYTES'),
      maxFiles: integer(env, 'UPLOAD_MAX_FILES'),
      maxPixels: integer(env, 'UPLOAD_MAX_PIXELS'),
    }),
    images: Object.freeze({
      storage: imageStorage,
      cleanupGraceMs: integer(env, 'IMAGE_CLEANUP_GRACE_SECONDS') * 1000,
    }),
    historyDays: integer(env, 'HISTORY_DAYS'),
    imageProcessing: Object.freeze({
      concurrency: integer(env, 'IMAGE_PROCESSING_CONCURRENCY'),
      variantsPerImage: integer(env, 'IMAGE_VARIANTS_PER_IMAGE'),
      variantCacheBytesPerImage: integer(env, 'IMAGE_VARIANT_CACHE_MB_PER_IMAGE') * MB,
      variantCacheBytes: integer(env, 'IMAGE_VARIANT_CACHE_MB') * MB,
      variantConcurrency: integer(env, 'IMAGE_VARIANT_CONCURRENCY'),
      variantQueue: integer(env, 'IMAGE_VARIANT_QUEUE'),
      variantsPerMinute: integer(env, 'RATE_LIMIT_IMAGE_VARIANTS'),
    }),
    oauth: Object.freeze({
      dynamicRegistration: flag(env, 'OAUTH_DYNAMIC_REGISTRATION'),
      clientMetadataDocuments: flag(env, 'OAUTH_CLIENT_METADATA_DOCUMENTS'),
    }),
    rateLimits: Object.freeze({
      api: integer(env, 'RATE_LIMIT_API'),
      token: integer(env, 'RATE_LIMIT_TOKEN'),
    }),
    corsOrigins: corsOriginsOf(text(env, 'CORS_ORIGINS')),
    demo: flag(env, 'DEMO_DATA'),
    webhooks: Object.freeze({
      allowPrivateTargets: flag(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS'),
      retrySchedule: retryScheduleOf(env),
      concurrency: integer(env, 'WEBHOOK_CONCURRENCY'),
      concurrencyPerHook: integer(env, 'WEBHOOK_CONCURRENCY_PER_HOOK'),
      concurrencyPerSite: integer(env, 'WEBHOOK_CONCURRENCY_PER_SITE'),
      pollMs: integer(env, 'WEBHOOK_POLL_MS'),
    }),
  });
}

/** A config for tests and tools: in-memory SQLite unless a database URL is given. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return Object.freeze({
    ...loadConfig({
      DATA_DIR: overrides.dataDir ?? path.join(process.cwd(), 'test-output', 'data'),
      DATABASE_URL: 'sqlite::memory:',
      COOKIE_SECRETS: 'x'.repeat(32),
      LOG_LEVEL: 'silent',
      DEMO_DATA: 'false',
    }),
    ...overrides,
  });
}
