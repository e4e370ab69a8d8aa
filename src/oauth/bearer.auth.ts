import type Provider from 'oidc-provider';
import type { DbHandle } from '../db/schema.js';
import { formatTimestamp } from '../db/time.js';
import { UnauthorizedError } from '../errors.js';
import { type AuthMethod, lastUseIsStale, type Principal } from '../http/authenticate.js';
import { readLiveConnectionByGrant, touchConnection } from './connection.repository.js';

function invalid(): UnauthorizedError {
  return new UnauthorizedError('The access token is not valid: unknown, expired or revoked.', 'invalid_token');
}

/**
 * OAuth access tokens, from the Authorization header only (RFC 6750 §2.1; OAuth 2.1 forbids the
 * query string, so ?access_token= is never read). Tokens are opaque and stored: each request
 * checks the token, and that its connection is active and its grant still exists, so a revoked
 * connection fails on the very next request. The website comes from the connection.
 */
export function bearerAuth(provider: Provider, db: DbHandle, resource: string): AuthMethod {
  return {
    name: 'bearer',
    async authenticate(request): Promise<Principal | undefined> {
      const header = request.headers.authorization;
      if (!header || !/^bearer /i.test(header)) return undefined;
      const value = header.slice(7).trim();
      const token = value ? await provider.AccessToken.find(value) : undefined;
      // find() has checked the expiry already.
      if (!token?.grantId || token.aud !== resource) throw invalid();
      const now = new Date();
      const connection = await readLiveConnectionByGrant(db, token.grantId, formatTimestamp(now));
      if (!connection) throw invalid();
      if (lastUseIsStale(connection.last_used_at, now)) await touchConnection(db, token.grantId, { last_used_at: formatTimestamp(now) });
      return {
        siteId: connection.site_id,
        scopes: new Set((token.scope ?? '').split(' ').filter(Boolean)),
        method: 'bearer',
        subject: connection.id,
      };
    },
  };
}
