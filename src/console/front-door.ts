import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { SCOPES } from '../auth/scopes.js';
import type { Config } from '../config.js';
import type { DbHandle } from '../db/schema.js';
import { DEMO_CLIENT_ID, readClientMetadata } from '../oauth/clients/client.service.js';
import { AUTH_PATH } from '../oauth/oauth.service.js';
import { packageVersion } from '../reference/package-version.js';
import { toPublicAddress } from '../web/public-address.js';
import { sendPage, VIEWS_DIR } from '../web/views.js';

/** The /try page's script: a file beside the templates, read once, served as it is (no build step). */
const VERSION = packageVersion();
const TRY_SCRIPT = readFileSync(path.join(VIEWS_DIR, 'try.js'), 'utf8');

/** `/`: what runs here, and where to go next. `/try`: the whole OAuth flow in one click. */
export function registerFrontDoor(app: FastifyInstance, { config, db }: { config: Config; db: DbHandle }): void {
  app.get('/', { schema: { hide: true } }, async (_request, reply) =>
    sendPage(reply, 200, 'home', { base: config.publicUrl, version: VERSION, scopes: SCOPES, wide: true }),
  );

  app.get('/try', { schema: { hide: true }, onRequest: toPublicAddress(config.publicUrl) }, async (_request, reply) => {
    const redirectUri = `${config.publicUrl}/try`;
    const demo = await readClientMetadata(db, DEMO_CLIENT_ID);
    const available = Boolean((demo?.redirect_uris as string[] | undefined)?.includes(redirectUri));
    return sendPage(
      reply,
      200,
      'try',
      { base: config.publicUrl, issuer: `${config.publicUrl}${AUTH_PATH}`, clientId: DEMO_CLIENT_ID, redirectUri, available, wide: true },
      { script: true, connectSelf: true },
    );
  });

  app.get('/try.js', { schema: { hide: true } }, async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'no-cache')
      .send(TRY_SCRIPT),
  );
}
