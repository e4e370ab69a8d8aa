import type { Timestamp } from '../db/time.js';

/** A registered application. Clients are public: PKCE, no secret (DESIGN §2). */
export type OAuthClientSource = 'cli' | 'console' | 'dynamic' | 'metadata_document';

export interface OAuthClientsTable {
  client_id: string;
  name: string;
  /** JSON array of exact redirect URIs. */
  redirect_uris: string;
  /** 'web' (exact match) or 'native' (RFC 8252: loopback port may vary). */
  application_type: 'web' | 'native';
  /**
   * How it came to exist: 'cli' (an operator, the demo seeder), 'console' (a signed-in owner),
   * 'dynamic' (RFC 7591, anonymous) or 'metadata_document' (an https client_id whose document was
   * fetched, docs/mcp.md). Dynamic and metadata-document clients name themselves, so they are shown
   * as unverified (docs/console.md).
   */
  source: OAuthClientSource;
  /** JSON object: any further metadata a dynamic registration sent (client_uri, logo_uri…). */
  metadata: string;
  created_at: Timestamp;
  /** The user who registered it in the owner console; null for the CLI's and dynamic ones. */
  owner_user_id: number | null;
}

/**
 * 'pending' from consent until the grant's first token is issued (the code exchange): until then
 * nothing is connected, and an authorization whose code is never exchanged is removed once the
 * code can no longer be (dropUnfinishedConnections).
 */
export type ConnectionStatus = 'pending' | 'active' | 'revoked' | 'expired';

/** One authorization: user + client + site + resource + approved scopes, keyed by the provider's grant id. */
export interface OAuthConnectionsTable {
  id: string;
  grant_id: string;
  user_id: number;
  client_id: string;
  site_id: number;
  /**
   * The resource indicator the grant is for (RFC 8707), its tokens' audience: {base_url} (the REST
   * API) or {base_url}/mcp. Null for a connection that ended before it was recorded (0017).
   */
  resource: string | null;
  /** Space-separated, as approved on the consent page. */
  scopes: string;
  status: ConnectionStatus;
  created_at: Timestamp;
  last_used_at: Timestamp | null;
  /** When the refresh token lifetime runs out unless refreshed again (rolling 90 days). */
  expires_at: Timestamp;
  revoked_at: Timestamp | null;
}

/**
 * oidc-provider's stored models (Session, Interaction, AuthorizationCode, AccessToken,
 * RefreshToken, Grant). `id` is SHA-256 of the provider's id, so a database dump holds no usable
 * token; the payload never contains the id either.
 */
interface OAuthPayloadsTable {
  model: string;
  id: string;
  payload: string;
  grant_id: string | null;
  uid: string | null;
  expires_at: Timestamp | null;
  consumed_at: Timestamp | null;
}

/** Fixed-window counters for rate limits shared by every process (Redis takes over when configured). */
interface RateLimitsTable {
  key: string;
  count: number;
  reset_at: Timestamp;
}

export interface OAuthTables {
  oauth_clients: OAuthClientsTable;
  oauth_connections: OAuthConnectionsTable;
  oauth_payloads: OAuthPayloadsTable;
  rate_limits: RateLimitsTable;
}
