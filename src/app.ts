import Fastify, { type FastifyInstance } from 'fastify';
import type pino from 'pino';
import { apiKeyAuth } from './auth/api-key.js';
import { challengeFor, installAuthentication, requireDeclaredAccess } from './auth/authenticate.js';
import { PrincipalCache } from './auth/principal-cache.js';
import type { Config } from './config.js';
import { registerConsole } from './console/console.routes.js';
import { registerFrontDoor } from './console/front-door.js';
import { registerBlogs } from './content/blogs/blog.routes.js';
import { removeOrphanImages } from './content/blogs/image-cleanup.js';
import type { ChangeLog } from './content/history/change-log.js';
import { registerHistory } from './content/history/history.routes.js';
import { applyRetention } from './content/history/retention.service.js';
import { registerPages } from './content/pages/page.routes.js';
import { LIST_RECORDS_IN_FLIGHT } from './content/shared/envelope.js';
import type { Db } from './db/database.js';
import { arrivalOrderServer } from './http/arrival-order.js';
import { Budget } from './http/budget.js';
import { installSerializers } from './http/compiled-schemas.js';
import { rateLimitStores } from './http/configured-rate-limits.js';
import { installCors } from './http/cors.js';
import { registerHealth } from './http/health.routes.js';
import { closeIdleConnections } from './http/idle-timeout.js';
import { installJsonBodies } from './http/json-body.js';
import { BODY_LIMIT_BYTES, MAX_PARAM_LENGTH } from './http/limits.js';
import { loggerOptions, requestIds, requestLines, requestLogger } from './http/logging.js';
import type { OutboundFetch, OutboundGuard } from './http/outbound.js';
import { clientErrorAnswer, frameworkErrorAnswer, installProblemHandler } from './http/problem.js';
import { apiRateLimit } from './http/rate-limit.js';
import { installAnswerHeaders, installCompression } from './http/representation.js';
import { installRequestHeaders, trustProxyOption } from './http/trust-proxy.js';
import { installValidators } from './http/validation.js';
import { registerMcp } from './mcp/mcp.routes.js';
import { createOAuthServer } from './oauth/oauth.plugin.js';
import { referenceForUnauthorized, registerReference } from './reference/reference.plugin.js';
import { configuredStorage } from './storage/configured-storage.js';
import { registerImageFiles, variantRateLimit } from './storage/image.routes.js';
import { ImageProcessor } from './storage/image-processor.js';
import type { ImageStorage } from './storage/image-storage.js';
import { Upkeep } from './upkeep.js';
import { forgetRotatedSecrets } from './webhooks/hook.repository.js';
import { deliveryGuard } from './webhooks/webhook.guard.js';
import { changeLogWithWebhooks } from './webhooks/webhook.outbox.js';
import { removeOldDeliveries } from './webhooks/webhook.repository.js';
import { registerWebhooks } from './webhooks/webhook.routes.js';
import { WebhookWorker } from './webhooks/webhook.worker.js';

interface AppDeps {
  readonly config: Config;
  readonly db: Db;
  /** The change log every write of a page or blog appends to, with the webhook outbox; changeLogWithWebhooks() when absent. */
  readonly changeLog?: ChangeLog;
  /** Where uploaded images are kept; IMAGE_STORAGE's driver (swept at start) when absent. */
  readonly images?: ImageStorage;
  /** Keeps the principals credentials proved; when absent, one on the database's change source unless KEEP_CREDENTIALS=false. */
  readonly principals?: PrincipalCache;
  /** Where log lines go; stdout, written synchronously, when absent (tests, the CLI). */
  readonly logStream?: pino.DestinationStream;
  /** Does all image work; one built from the configuration when absent (tests hand in one they can watch). */
  readonly processor?: ImageProcessor;
  /** The guard webhook targets are checked and delivered through; deliveryGuard(config.webhooks) when absent (tests fake its DNS). */
  readonly webhookGuard?: OutboundGuard;
  /** The guarded fetch for Client ID Metadata Documents; the guard's defaults when absent (tests trust their own CA). */
  readonly metadataDocumentFetch?: OutboundFetch;
}

/** Headers come first and are small: they get less time than the body may take. */
const HEADERS_TIMEOUT_MS = 20_000;

/** The whole wiring, in order. server.ts only listens; tests call this and use app.inject. */
export async function buildApp({
  config,
  db,
  changeLog = changeLogWithWebhooks(),
  images,
  principals,
  logStream,
  processor: givenProcessor,
  webhookGuard: givenWebhookGuard,
  metadataDocumentFetch,
}: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(config.logLevel, logStream),
    childLoggerFactory: requestLogger as never,
    logController: requestLines(config.logLevel),
    genReqId: requestIds(),
    requestIdHeader: false,
    trustProxy: trustProxyOption(config.trustProxy),
    bodyLimit: BODY_LIMIT_BYTES,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // Slow or silent clients cannot hold a connection for good (docs/deploy.md, Timeouts): a
    // connection that waits for its client and is silent both ways for idleTimeoutMs is closed
    // (closeIdleConnections); a request whose headers or body are not all in within their time is
    // answered 408 (clientErrorAnswer) and closed. Node checks those two every
    // connectionsCheckingInterval, so that is what a limit may overrun by.
    connectionTimeout: config.http.idleTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    requestTimeout: config.http.requestTimeoutMs,
    http: {
      // installRequestHeaders answers a missing Host with a problem; Node's check answers an empty 400.
      requireHostHeader: false,
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, config.http.requestTimeoutMs),
      connectionsCheckingInterval: 1000,
    },
    clientErrorHandler: clientErrorAnswer,
    frameworkErrors: frameworkErrorAnswer(config.corsOrigins),
    // Requests are answered in the order they arrived, so the slowest wait stays near the median.
    serverFactory: arrivalOrderServer,
  });
  closeIdleConnections(app.server);
  // First, so that every route added after it is checked.
  requireDeclaredAccess(app);
  installRequestHeaders(app);
  installAnswerHeaders(app);
  // Before any route (it records their methods for preflights) and before every other onRequest
  // hook that may answer (authentication, the Markdown reference), so those answers carry it too.
  installCors(app, config.corsOrigins);

  // JSON only (multipart where a route adds it): a text/plain body is a 415, not a string to validate.
  app.removeContentTypeParser('text/plain');
  installJsonBodies(app);
  installValidators(app);
  installSerializers(app);
  installProblemHandler(app, {
    challenge: challengeFor(config.publicUrl),
    unauthorizedExtra: (request) => {
      const reference = referenceForUnauthorized(request);
      return reference ? { reference } : undefined;
    },
  });
  // Before any route: it attaches to each as it is added.
  await installCompression(app);
  // Order matters: the Markdown reference answers before authentication asks for credentials.
  await registerReference(app, config);
  const limits = rateLimitStores(db.kysely, config, {
    outage: (redis) =>
      app.log.warn(
        { redis },
        'Redis is unreachable: rate limits are counted in the database (sign-in, registration) and in each process (content API, token endpoints) until it is back',
      ),
    recovered: () => app.log.info('Redis is reachable again: rate limits are counted in Redis'),
  });
  app.addHook('onClose', () => limits.close());
  // Waits for one connection attempt (bounded by the client timeouts), so that a Redis that is up counts from the first request.
  await limits.redis?.firstConnection;
  const cache = principals ?? (config.keepCredentials ? new PrincipalCache(db.changes) : undefined);
  const oauth = createOAuthServer({ config, db: db.kysely, log: app.log, limits, principals: cache, metadataDocumentFetch });
  // The API limit is per credential, counted once authenticated. docs/rate-limits.md says why in-process without Redis.
  installAuthentication(
    app,
    {
      api: { bearer: oauth.bearer.api, apiKey: apiKeyAuth(db.kysely, cache, config.legacyQueryCredentials) },
      mcp: { bearer: oauth.bearer.mcp },
    },
    apiRateLimit(config.rateLimits.api, limits.perRequest),
  );

  registerHealth(app, db, limits.redis);
  await oauth.register(app);
  const imageStorage = images ?? (await configuredImages(config, db, app));
  // One outbound guard for webhook targets: the console and the API check a hook's URL with the one that delivers to it.
  const webhookGuard = givenWebhookGuard ?? deliveryGuard(config.webhooks);
  // After the image storage: the console's undo deletes blogs, whose images it names.
  await registerConsole(app, {
    provider: oauth.provider,
    db: db.kysely,
    config,
    limits: limits.shared,
    images: imageStorage,
    changeLog,
    webhookGuard,
  });
  registerFrontDoor(app, { config, db: db.kysely });
  const processor = givenProcessor ?? configuredProcessor(config);
  // Before the server waits for requests in progress: image work not yet started is refused (503)
  // then, so a shutdown waits for the images being made, not for every one queued.
  app.addHook('preClose', async () => processor.close());
  // A client gone does not stop what libvips has begun: the app is closed once that has ended.
  app.addHook('onClose', async () => processor.idle());
  const image = config.imageProcessing;
  registerImageFiles(app, imageStorage, {
    processor,
    cache: { perImage: image.variantsPerImage, bytesPerImage: image.variantCacheBytesPerImage, bytes: image.variantCacheBytes },
    newVariants: variantRateLimit(image.variantsPerMinute, limits.shared),
  });
  const lists = new Budget(LIST_RECORDS_IN_FLIGHT);
  for (const prefix of ['/api', '/webapps/api']) {
    await app.register(async (scope) => registerPages(scope, { db: db.kysely, changeLog, prefix, lists }), { prefix });
    await app.register(
      async (scope) => registerBlogs(scope, { db: db.kysely, changeLog, config, prefix, images: imageStorage, processor, lists }),
      {
        prefix,
      },
    );
    await app.register(async (scope) => registerHistory(scope, { deps: { db: db.kysely, changeLog, images: imageStorage }, prefix }), {
      prefix,
    });
  }
  // Webhooks: the management API, and this process's share of the deliveries (webhook.worker.ts).
  await app.register(
    async (scope) => registerWebhooks(scope, { db: db.kysely, guard: webhookGuard, retrySteps: config.webhooks.retrySchedule.length }),
    { prefix: '/api' },
  );
  const deliveries = new WebhookWorker({
    db: db.kysely,
    config: config.webhooks,
    guard: webhookGuard,
    warn: (err, message) => app.log.warn({ err }, message),
  });
  deliveries.start();
  app.addHook('onClose', () => deliveries.stop());
  const upkeep = new Upkeep(
    [
      oauth.upkeep,
      {
        name: 'removing change history older than HISTORY_DAYS',
        run: () => applyRetention(db.kysely, imageStorage, config.historyDays, config.images.cleanupGraceMs),
      },
      {
        name: 'removing webhook deliveries older than HISTORY_DAYS, and secrets past their rotation overlap',
        run: async () => ({
          deliveries: await removeOldDeliveries(db.kysely, config.historyDays),
          rotatedSecrets: await forgetRotatedSecrets(db.kysely),
        }),
      },
    ],
    app.log,
  );
  app.decorate('upkeep', upkeep);
  upkeep.start();
  app.addHook('onClose', () => upkeep.stop());
  // After the content routes: its tools are built from their schemas.
  await registerMcp(app, {
    deps: { db: db.kysely, changeLog, images: imageStorage, warn: (message, error) => app.log.warn({ err: error }, message) },
  });
  return app;
}

/** The image processor the settings describe: uploads' pool and variants' bounded pool. */
export function configuredProcessor(config: Config): ImageProcessor {
  const image = config.imageProcessing;
  return new ImageProcessor({
    concurrency: image.concurrency,
    maxPixels: config.uploads.maxPixels,
    variants: { concurrency: image.variantConcurrency, queue: image.variantQueue },
  });
}

/**
 * The storage IMAGE_STORAGE names, with what a crash left in it removed (staged uploads, images no
 * record shows; see removeOrphanImages for the grace period). Here rather than in startServer: this
 * is where the app takes the storage as its own, so every way of starting (npm start, cms serve,
 * tests) gets the same; a storage passed in belongs to whoever made it. Once per start is enough,
 * since only a crash (or a failed clean-up) leaves orphans behind.
 */
async function configuredImages(config: Config, db: Db, app: FastifyInstance): Promise<ImageStorage> {
  const storage = configuredStorage(config, db.kysely);
  const removed = await removeOrphanImages(db.kysely, storage, config.images.cleanupGraceMs);
  if (removed.staged + removed.unreferenced > 0) {
    app.log.info({ ...removed, storage: config.images.storage }, 'removed staged uploads and unreferenced images left by an earlier crash');
  }
  return storage;
}
