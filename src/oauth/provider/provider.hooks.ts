import type Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { withRequestTransaction, writeHandle } from '../../db/request-transaction.js';
import type { DbHandle } from '../../db/schema.js';
import { now, secondsFromNow } from '../../db/time.js';
import { noRoute, problemBody } from '../../http/problem.js';
import { REGISTERED_METADATA } from '../clients/registration.body.js';
import { activateConnection, touchConnection } from '../connections/connection.repository.js';
import { authorizationServerMetadata } from './metadata.js';

type Body = Record<string, unknown>;

/**
 * After a successful code exchange or refresh: the response gains refresh_token_expires_in
 * (spec §5.3), and the connection records its use and its new end (90 days from now). A code
 * exchange is the grant's first token: its pending connection becomes active, in the transaction
 * that stores the token, so no token is ever live on a pending connection.
 */
async function afterTokenIssued(ctx: KoaContextWithOIDC, db: DbHandle): Promise<void> {
  const body = ctx.body as Body;
  const { RefreshToken: refreshToken, AccessToken: accessToken } = ctx.oidc.entities;
  const grantId = refreshToken?.grantId ?? accessToken?.grantId;
  if (!grantId) return;
  if (ctx.oidc.params?.grant_type === 'authorization_code') await activateConnection(await writeHandle(db), grantId);
  if (refreshToken && body.refresh_token) {
    // remainingTTL, not exp: a token saved in this request has no exp on the model yet.
    const remaining = refreshToken.remainingTTL;
    ctx.body = { ...body, refresh_token_expires_in: remaining };
    await touchConnection(await writeHandle(db), grantId, { last_used_at: now(), expires_at: secondsFromNow(remaining) });
  } else {
    await touchConnection(await writeHandle(db), grantId, { last_used_at: now() });
  }
}

/**
 * A registration's answer: the client's id and the metadata it registered (REGISTERED_METADATA).
 * Not the OpenID Connect defaults oidc-provider adds (`id_token_signed_response_alg`…), for
 * features this server does not have, nor the client_secret it mints when a registration omits
 * token_endpoint_auth_method: every client is public; no secret is shown or kept.
 */
function registrationAnswer<T extends Body>(metadata: T): T {
  return Object.fromEntries(
    Object.entries(metadata).filter(([key]) => key === 'client_id' || key === 'client_id_issued_at' || REGISTERED_METADATA.has(key)),
  ) as T;
}

/**
 * An address under /api/auth that the provider does not serve, or a method it does not take
 * there (GET /token, POST /authorize): Koa would answer a text/plain "Not Found". Like any other
 * unknown address it is a 404 problem (docs/errors.md), not an RFC 6749 error: no endpoint ran.
 */
function answerUnknownRoute(ctx: KoaContextWithOIDC): void {
  const path = (ctx.req as { originalUrl?: string }).originalUrl ?? ctx.originalUrl;
  ctx.status = 404;
  ctx.body = problemBody(noRoute(ctx.method, path.split('?')[0] ?? path), path);
  ctx.type = 'application/problem+json; charset=utf-8';
  ctx.set('cache-control', 'no-store');
}

/**
 * RFC 6749 §5.2: a request missing a required parameter is invalid_request; RFC 7636 §4.6 keeps
 * invalid_grant for a verifier that does not match. Every client must use PKCE here, so a code
 * exchange without code_verifier is malformed whatever its code, but oidc-provider answers it
 * invalid_grant. (A replayed code has by then revoked its connection, as with any replay.)
 */
function missingVerifierIsInvalidRequest(ctx: KoaContextWithOIDC): void {
  const params = ctx.oidc.params;
  if (params?.grant_type !== 'authorization_code' || params.code_verifier || (ctx.body as Body | undefined)?.error !== 'invalid_grant')
    return;
  ctx.body = { error: 'invalid_request', error_description: "missing required parameter 'code_verifier'" };
}

/**
 * A request to the token or revocation endpoint that names no client at all: oidc-provider says
 * "no client authentication mechanism provided", which reads as if a secret were missing. Every
 * client here is public and identifies itself by client_id alone, so that is what to say.
 */
function missingClientIdSaysSo(ctx: KoaContextWithOIDC): void {
  const body = ctx.body as Body | undefined;
  if (body?.error !== 'invalid_request' && body?.error !== 'invalid_client') return;
  if (!/no client authentication mechanism provided/.test(String(body.error_description))) return;
  ctx.status = 400;
  ctx.remove('www-authenticate');
  ctx.body = {
    error: 'invalid_request',
    error_description: "missing required parameter 'client_id': a public client sends its client_id in the form body",
  };
}

/** The provider's paths whose storage work runs in one transaction (request-transaction.ts). */
const TRANSACTIONAL = new Set(['/token', '/revoke']);

export function installProviderHooks(provider: Provider, db: DbHandle, issuer: string): void {
  // First, so it wraps the hook below: the connection's touch joins the token's writes. Committed
  // before Koa writes the answer, so a client never holds a token the database has not stored.
  // An error answer rolls back, except for revocations (a replayed refresh token or code).
  provider.use(async (koa, next) => {
    if (koa.method !== 'POST' || !TRANSACTIONAL.has(koa.path)) return next();
    await withRequestTransaction(db, next, () => koa.status < 400);
  });
  provider.use(async (koa, next) => {
    await next();
    const ctx = koa as KoaContextWithOIDC;
    if (ctx.status === 404 && ctx.body == null) return answerUnknownRoute(ctx);
    if (ctx.oidc?.route === 'registration' && ctx.status === 201) ctx.body = registrationAnswer(ctx.body as Body);
    if (ctx.oidc?.route === 'token' && ctx.status === 400) missingVerifierIsInvalidRequest(ctx);
    if (ctx.status === 400 || ctx.status === 401) missingClientIdSaysSo(ctx);
    if (ctx.status !== 200) return;
    if (ctx.oidc?.route === 'token') await afterTokenIssued(ctx, db);
    if (ctx.oidc?.route === 'discovery') ctx.body = authorizationServerMetadata(provider, issuer, ctx.body as Body);
  });
}
