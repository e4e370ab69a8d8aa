import { randomUUID } from 'node:crypto';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import type pino from 'pino';
import type { Config } from './config.js';
import { registerBlogs } from './content/blogs/blog.routes.js';
import { registerPages } from './content/pages/page.routes.js';
import type { Db } from './db/database.js';
import { apiKeyAuth } from './http/api-key.auth.js';
import { challengeFor, installAuthentication, requireDeclaredAccess } from './http/authenticate.js';
import { installEntityTags } from './http/etag.js';
import { registerHealth } from './http/health.routes.js';
import { loggerOptions } from './http/logging.js';
import { clientErrorAnswer, installProblemHandler } from './http/problem.js';
import { installApiRateLimit } from './http/rate-limit.js';
import { rateLimitStores } from './http/rate-limit.store.js';
import { installForwardedHeaders, trustProxyOption } from './http/trust-proxy.js';
import { installValidators } from './http/validation.js';
import { createOAuthServer } from './oauth/oauth.plugin.js';
import { referenceFor, registerReference } from './reference/reference.plugin.js';
import { registerImageFiles } from './storage/image.routes.js';
import type { ImageStorage } from './storage/image-storage.js';
import { LocalImageStorage } from './storage/local-image-storage.js';

export interface AppDeps {
  readonly config: Config;
  readonly db: Db;
  /** Where uploaded images are kept; a folder under DATA_DIR/images by default. */
  readonly images?: ImageStorage;
  /** Where log lines go; stdout, written synchronously, when absent (tests, the CLI). */
  readonly logStream?: pino.DestinationStream;
}

/** The whole wiring, in order. server.ts only listens; tests call this and use app.inject. */
export async function buildApp({ config, db, images, logStream }: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(config.logLevel, logStream),
    genReqId: (req) => {
      const sent = req.headers['x-request-id'];
      return typeof sent === 'string' && /^[\w.-]{1,64}$/.test(sent) ? sent : randomUUID();
    },
    requestIdHeader: false,
    trustProxy: trustProxyOption(config.trustProxy),
    bodyLimit: 5 * 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: true },
    clientErrorHandler: clientErrorAnswer,
  });
  // First, so that every route added after it is checked.
  requireDeclaredAccess(app);
  installForwardedHeaders(app);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  // JSON only (multipart where a route adds it): a text/plain body is a 415, not a string to validate.
  app.removeContentTypeParser('text/plain');
  installValidators(app);
  installProblemHandler(app, {
    challenge: challengeFor(config.publicUrl),
    unauthorizedExtra: (request) => {
      const reference = referenceFor(request);
      return reference ? { reference } : undefined;
    },
  });
  // Order matters: the Markdown reference answers before authentication asks for credentials.
  await registerReference(app, config);
  const limits = rateLimitStores(db.kysely, config);
  app.addHook('onClose', () => limits.close());
  const oauth = createOAuthServer({ config, db: db.kysely, log: app.log, limits });
  installAuthentication(app, [oauth.bearer, apiKeyAuth(db.kysely)]);
  // After authentication: the limit is per credential. docs/rate-limits.md says why in-process without Redis.
  installApiRateLimit(app, config.rateLimits.api, limits.perRequest);
  installEntityTags(app);

  registerHealth(app, db);
  await oauth.register(app);
  const imageStorage = images ?? (await localImages(config, app));
  registerImageFiles(app, imageStorage);
  for (const prefix of ['/api', '/webapps/api']) {
    await app.register(async (scope) => registerPages(scope, { db: db.kysely, prefix }), { prefix });
    await app.register(async (scope) => registerBlogs(scope, { db: db.kysely, config, prefix, images: imageStorage }), { prefix });
  }
  return app;
}

/**
 * The default storage, with the staged files of a crashed process removed. Here rather than in
 * startServer: this is where the app takes the folder as its own, so every way of starting (npm
 * start, cms serve, tests) gets the same; a storage passed in belongs to whoever made it. Once per
 * start is enough, since only a crash leaves staged files behind.
 */
async function localImages(config: Config, app: FastifyInstance): Promise<LocalImageStorage> {
  const storage = new LocalImageStorage(path.join(config.dataDir, 'images'));
  const removed = await storage.removeAbandoned();
  if (removed > 0) app.log.info({ removed }, 'removed staged uploads left by an earlier crash');
  return storage;
}
