/**
 * Every environment variable the service reads, declared once: its name, its value when unset,
 * the range of a whole number, and what it means. The config loader (config.ts) takes defaults and
 * ranges from here, and the README's Configuration table is this table (config.docs.test.ts fails
 * when they differ), so the code, the defaults and the documentation cannot drift apart.
 */
interface Setting {
  readonly name: string;
  /** The value an unset or empty variable stands for. Absent when it is worked out at start-up (`shown` says how). */
  readonly default?: string;
  /** The README's Default column, when it is not `default` as code. */
  readonly shown?: string;
  /** A whole number's smallest and largest accepted values. */
  readonly range?: readonly [min: number, max: number];
  /** The README's Meaning column (Markdown, links relative to the README). */
  readonly meaning: string;
}

export const SETTINGS: readonly Setting[] = [
  {
    name: 'PUBLIC_URL',
    shown: '`http://localhost:$PORT`',
    meaning: "The service's public address (absolute http(s), no query); OAuth and links use it",
  },
  {
    name: 'PORT',
    default: '8080',
    range: [0, 65535],
    meaning: 'Port to listen on',
  },
  {
    name: 'HOST',
    default: '0.0.0.0',
    meaning: 'Address to listen on',
  },
  {
    name: 'WORKERS',
    default: '0',
    range: [0, 1024],
    meaning:
      'Processes that serve requests; `0`: one per available core (`os.availableParallelism()`); `1`: a single process. With more, a primary process migrates the database, starts them, replaces one that dies and stops them all on SIGTERM; they share rate limits (through Redis, or else through the primary). See [docs/deploy.md](docs/deploy.md#workers)',
  },
  {
    name: 'DATA_DIR',
    default: './data',
    meaning: 'Folder for the SQLite file, uploaded images, the generated cookie secret and the demo credentials',
  },
  {
    name: 'DATABASE_URL',
    shown: 'SQLite at `$DATA_DIR/cms.sqlite`',
    meaning: '`sqlite:<file>` or `postgres://user:password@host:port/database`',
  },
  {
    name: 'DATABASE_POOL_SIZE',
    default: '10',
    range: [1, 1000],
    meaning:
      "PostgreSQL only: the most connections one process opens: nodes × this must stay below the server's `max_connections` (or the pooler's limit), with room for the CLI and the one listening connection each node keeps",
  },
  {
    name: 'SQLITE_SYNCHRONOUS',
    default: 'full',
    meaning:
      'SQLite only. `full`: every commit is on disk before it is acknowledged or read (survives a power cut); commits made at once share one fsync, off the event loop (docs/architecture.md, group commit). `normal`: no fsync at commit; survives a process crash but a power cut can lose the last commits',
  },
  // As much of the file as SQLite will map (just under 2 GiB): a smaller map makes the rows past its
  // end slower to read than the rows before it (bench/README.md, growth check). Only address space is
  // reserved; pages are mapped as they are read.
  {
    name: 'SQLITE_MMAP_MB',
    default: '2047',
    range: [0, 2047],
    meaning:
      "SQLite only. How many megabytes of the database file are read through a memory map (0: off; 2047, SQLite's limit, by default). Reads take pages from the OS page cache without a system call per page: lists of 200 about 3× faster. The mapped pages count in the process's RSS as shared, file-backed memory that the OS can reclaim (docs/deploy.md)",
  },
  {
    name: 'REDIS_URL',
    shown: 'none',
    meaning: '`redis://…` or `rediss://…`, optional: lets several nodes share rate limits',
  },
  {
    name: 'REDIS_KEY_PREFIX',
    default: 'cms:',
    meaning: 'Starts every Redis key (up to 64 letters, digits, `_:.-`), so that several deployments can share one Redis',
  },
  {
    name: 'TRUST_PROXY',
    default: 'off',
    shown: 'off',
    meaning:
      "Which proxies' `X-Forwarded-For`/`-Proto`/`-Host` to believe. Off: the client is the connection's address and the protocol is the connection's. A number: that many proxies in front. Comma-separated addresses or CIDR ranges (`10.0.0.0/8,::1`; also `loopback`, `linklocal`, `uniquelocal`): only those proxies. `true` is refused. See [docs/proxies.md](docs/proxies.md)",
  },
  {
    name: 'LEGACY_QUERY_CREDENTIALS',
    default: 'true',
    meaning:
      "Accept API credentials as the query parameters `apiID` and `apiKey`, as the hosted original's clients send them (never logged). `false` refuses them with a 400 that says to send headers. See [docs/compat.md](docs/compat.md)",
  },
  {
    name: 'KEEP_CREDENTIALS',
    default: 'true',
    meaning:
      "Each node keeps who the API credentials and access tokens it has checked proved to be, until the database says one changed. With PostgreSQL another node's revocation reaches this one as a notification, within milliseconds rather than on the very next request; `false` reads them on every request. See [docs/deploy.md](docs/deploy.md#kept-credentials)",
  },
  {
    name: 'RATE_LIMIT_API',
    default: '600',
    range: [0, 100000000],
    meaning:
      'Content API requests per minute per credential (an API key or an OAuth connection); `0` switches it off. See [docs/rate-limits.md](docs/rate-limits.md)',
  },
  {
    name: 'RATE_LIMIT_TOKEN',
    default: '120',
    range: [0, 100000000],
    meaning:
      'Requests per minute to the OAuth token, revocation and registration endpoints, counted per client and, separately, per IP address (both must pass); `0` switches it off. See [docs/rate-limits.md](docs/rate-limits.md)',
  },
  {
    name: 'CORS_ORIGINS',
    default: '*',
    meaning:
      "Which origins' browser apps may call the API, `/mcp`, the OAuth token, revocation and registration endpoints and the metadata documents: `*` (any), or comma-separated origins (`https://app.example,http://localhost:5173`: scheme, host and port only). Other origins get no CORS headers, and their token requests are refused. The HTML pages never answer other origins. See [docs/api.md](docs/api.md#browser-apps-cors)",
  },
  {
    name: 'COOKIE_SECRETS',
    shown: 'generated into `$DATA_DIR/cookie-secret` (SQLite only)',
    meaning:
      "Secrets that sign the authorization server's cookies: comma-separated, each 32+ characters. Set it with PostgreSQL or several nodes, or sessions end at every restart",
  },
  {
    name: 'LOG_LEVEL',
    default: 'info',
    meaning: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`; logs are JSON lines on stdout',
  },
  {
    name: 'HTTP_IDLE_TIMEOUT_SECONDS',
    default: '30',
    range: [1, 3600],
    meaning:
      'A connection silent both ways this long while it waits for its client is closed; a request still being answered (a long-poll, a queued upload) is not cut ([docs/deploy.md](docs/deploy.md#timeouts))',
  },
  {
    name: 'HTTP_REQUEST_TIMEOUT_SECONDS',
    default: '120',
    range: [1, 3600],
    meaning: "A request's headers and body must all arrive within this, or it is answered 408 (headers alone: 20 s)",
  },
  {
    name: 'HTTP_KEEP_ALIVE_TIMEOUT_SECONDS',
    default: '72',
    range: [1, 3600],
    meaning: 'How long a connection is kept open for the next request',
  },
  {
    name: 'UPLOAD_MAX_FILE_BYTES',
    default: '10485760',
    range: [1024, 1073741824],
    meaning: 'Largest accepted image upload, in bytes',
  },
  {
    name: 'UPLOAD_MAX_FILES',
    default: '20',
    range: [1, 1000],
    meaning: 'Most files in one upload request',
  },
  {
    name: 'UPLOAD_MAX_PIXELS',
    default: '50000000',
    range: [1, 1000000000],
    meaning: 'Largest image in pixels, read from its header before decoding; past it 413. See [docs/images.md](docs/images.md)',
  },
  {
    name: 'IMAGE_PROCESSING_CONCURRENCY',
    default: '2',
    range: [1, 64],
    meaning: 'Uploaded images processed at once per process (each holds its file and its decoded pixels)',
  },
  {
    name: 'IMAGE_VARIANT_CONCURRENCY',
    default: '1',
    range: [1, 64],
    meaning:
      'Sizes and formats made on request (`/images/<name>?…`) at once per process, in a pool of their own: they never hold up an upload. See [docs/images.md](docs/images.md)',
  },
  {
    name: 'IMAGE_VARIANT_QUEUE',
    default: '8',
    range: [0, 10000],
    meaning: 'Variant requests that may wait for that pool; one more is answered 503 with `Retry-After` at once',
  },
  {
    name: 'IMAGE_VARIANTS_PER_IMAGE',
    default: '20',
    range: [1, 1000],
    meaning: 'Sizes and formats made on request kept per image; the least recently used are dropped',
  },
  {
    name: 'IMAGE_VARIANT_CACHE_MB_PER_IMAGE',
    default: '32',
    range: [1, 1048576],
    meaning:
      "Megabytes (MiB) of one image's kept variants; past it the least recently used are dropped, and a variant larger than this is served but not kept",
  },
  {
    name: 'IMAGE_VARIANT_CACHE_MB',
    default: '1024',
    range: [1, 1048576],
    meaning:
      'Megabytes (MiB) of all kept variants together, in either storage driver; past it the least recently used of any image are dropped',
  },
  {
    name: 'RATE_LIMIT_IMAGE_VARIANTS',
    default: '60',
    range: [0, 100000000],
    meaning: 'New image variants per minute per client address (`0`: no limit)',
  },
  {
    name: 'IMAGE_STORAGE',
    default: 'local',
    meaning:
      'Where uploaded images are kept. `local`: files in `DATA_DIR/images`. `database`: in the database (SQLite or PostgreSQL), so several nodes need no shared disk. See [docs/blogs.md](docs/blogs.md#image-storage)',
  },
  {
    name: 'IMAGE_CLEANUP_GRACE_SECONDS',
    default: '3600',
    range: [0, 2592000],
    meaning:
      "Each start removes staged uploads and images no record refers to, when older than this: younger ones may be another node's upload in progress. `0` suits a single node (it removes at once what a crash left)",
  },
  {
    name: 'HISTORY_DAYS',
    default: '90',
    range: [1, 36500],
    meaning:
      'Days of change history kept: older changes and revisions are removed hourly, except the latest revision of each existing record. See [docs/history.md](docs/history.md)',
  },
  {
    name: 'WEBHOOK_ALLOW_PRIVATE_TARGETS',
    default: 'false',
    meaning:
      'Development and tests only: webhooks may point at loopback, private and unique-local addresses, and use plain http to those. Public targets always need https; link-local (metadata) addresses stay refused. See [docs/webhooks.md](docs/webhooks.md)',
  },
  // About seven tries over a day and a half: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
  {
    name: 'WEBHOOK_RETRY_SCHEDULE',
    default: '5,300,1800,7200,18000,36000,36000',
    meaning: 'Seconds before each retry of a failed webhook delivery (comma-separated, up to 20, ±10 % jitter); for tests',
  },
  {
    name: 'WEBHOOK_CONCURRENCY',
    default: '32',
    range: [1, 1000],
    meaning: 'Webhook attempts in flight at once per node',
  },
  {
    name: 'WEBHOOK_CONCURRENCY_PER_HOOK',
    default: '16',
    range: [1, 1000],
    meaning: 'Webhook attempts in flight at once to one hook per node',
  },
  {
    name: 'WEBHOOK_CONCURRENCY_PER_SITE',
    default: '8',
    range: [1, 1000],
    meaning:
      "Webhook attempts in flight at once to one website's hooks per node: its share, so that one website's slow or hanging receivers never hold the slots other websites' deliveries need ([docs/webhooks.md](docs/webhooks.md#delivery-and-retries))",
  },
  {
    name: 'WEBHOOK_POLL_MS',
    default: '50',
    range: [10, 60000],
    meaning: 'How often each node looks for webhook deliveries that are due, in milliseconds',
  },
  {
    name: 'OAUTH_DYNAMIC_REGISTRATION',
    default: 'true',
    meaning: 'Allow RFC 7591 client registration at `/api/auth/reg`',
  },
  {
    name: 'OAUTH_CLIENT_METADATA_DOCUMENTS',
    default: 'true',
    meaning:
      'Accept an https URL as `client_id`, described by the Client ID Metadata Document at that URL (fetched with size, time and address limits). See [docs/mcp.md](docs/mcp.md)',
  },
  {
    name: 'DEMO_DATA',
    default: 'true',
    meaning: 'Create the demo website when the database has no website',
  },
  {
    name: 'DEMO_PASSWORD',
    shown: 'random',
    meaning: "The demo owner's password (8+ characters), used only when the demo is created",
  },
];

const BY_NAME = new Map(SETTINGS.map((setting) => [setting.name, setting]));

/** The declaration of `name`; a name not in the table is a mistake in the code, not in the environment. */
export function settingOf(name: string): Setting {
  const setting = BY_NAME.get(name);
  if (!setting) throw new Error(`${name} is not declared in SETTINGS (src/settings.ts)`);
  return setting;
}

/** The README's Configuration table, as Markdown. */
export function settingsTable(): string {
  const rows = SETTINGS.map((s) => {
    const shown = s.shown ?? `\`${s.default}\``;
    const range = s.range ? `${s.range[0]}–${s.range[1]}` : '';
    return `| \`${s.name}\` | ${shown} | ${range} | ${s.meaning} |`;
  });
  return ['| Variable | Default | Range | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}
