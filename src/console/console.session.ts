import type { FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import { findUser } from '../accounts/account.repository.js';
import type { DbHandle } from '../db/schema.js';
import { SESSION_TTL_SECONDS } from '../oauth/oauth.service.js';

/**
 * The owner console signs in with the authorization server's own session: the `_session`
 * cookie (signed with COOKIE_SECRETS) naming a Session stored in oauth_payloads. Whoever signed
 * in on the OAuth pages is signed in here and the other way round, and any node can read it.
 */
export interface ConsoleUser {
  readonly id: number;
  readonly email: string;
  /** The session's stable uid: console forms' CSRF tokens are bound to it. */
  readonly sessionUid: string;
}

/** The signed-in user, or undefined: no cookie, an expired or destroyed session, a deleted user. */
export async function currentUser(provider: Provider, db: DbHandle, request: FastifyRequest, reply: FastifyReply) {
  const session = await provider.Session.get(provider.createContext(request.raw, reply.raw));
  if (!session.accountId || !/^\d+$/.test(session.accountId)) return undefined;
  const user = await findUser(db, Number(session.accountId));
  if (!user) return undefined;
  const signedIn: ConsoleUser = { id: user.id, email: user.email, sessionUid: session.uid };
  return signedIn;
}

/**
 * Starts a new session for the user. Any earlier one is destroyed rather than reused, so a
 * session id planted before sign-in is worthless after it (session fixation).
 */
export async function startSession(provider: Provider, request: FastifyRequest, reply: FastifyReply, userId: number): Promise<void> {
  const ctx = provider.createContext(request.raw, reply.raw);
  const earlier = await provider.Session.get(ctx);
  await earlier.destroy();
  const session = new provider.Session();
  session.loginAccount({ accountId: String(userId) });
  await session.save(SESSION_TTL_SECONDS);
  ctx.cookies.set(provider.cookieName('session'), session.jti, {
    httpOnly: true,
    sameSite: 'lax',
    expires: new Date(Date.now() + SESSION_TTL_SECONDS * 1000),
  });
}

/** Signs out everywhere this session was used: the console and the OAuth pages. */
export async function endSession(provider: Provider, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const ctx = provider.createContext(request.raw, reply.raw);
  const session = await provider.Session.get(ctx);
  await session.destroy();
  ctx.cookies.set(provider.cookieName('session'), null, { httpOnly: true, sameSite: 'lax' });
}
