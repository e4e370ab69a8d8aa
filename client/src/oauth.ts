import * as oauth from 'oauth4webapi';
import type { Credentials } from './auth.js';
import { ProblemError } from './errors.js';

/** What an application keeps of a connection between runs. */
export interface TokenSet {
  access_token: string;
  refresh_token?: string | undefined;
  /** When the access token expires, in milliseconds since the epoch. */
  expires_at?: number | undefined;
  scope?: string | undefined;
}

export interface OAuthOptions {
  /** The service's address (the API, `PUBLIC_URL`): the issuer is `<baseUrl>/api/auth`, and the `resource` of every token. */
  baseUrl: string;
  clientId: string;
  redirectUri: string;
  fetch?: typeof fetch;
  /** Allows plain http (a development server on localhost); never set it for a real deployment. */
  allowInsecureRequests?: boolean;
  /** The time now, in milliseconds (for tests of expiry). */
  now?: () => number;
  /** Each request's limit, in milliseconds (default 30 s). */
  timeoutMs?: number;
}

export interface AuthorizationRequest {
  /** Send the owner's browser here. */
  url: string;
  /** Keep both until the browser comes back to `redirectUri` (a session, sessionStorage): the exchange needs them. */
  state: string;
  codeVerifier: string;
}

export interface SessionOptions {
  /** Called with every new token set (after a refresh too, as refresh tokens rotate): store it, or the connection is lost. */
  onTokens?: (tokens: TokenSet) => void | Promise<void>;
  /** Refresh this long before the access token expires (default 60 s). */
  refreshEarlyMs?: number;
}

/** An RFC 6749 error from the token or revocation endpoint, as a ProblemError. */
async function tokenError(error: unknown): Promise<never> {
  if (error instanceof oauth.ResponseBodyError) {
    throw new ProblemError({
      type: 'about:blank',
      title: error.error,
      status: error.status,
      detail: error.error_description ?? error.error,
      body: error.cause,
      headers: error.response.headers,
      requestId: error.response.headers.get('x-request-id') ?? undefined,
    });
  }
  throw error;
}

/**
 * The authorization code flow with PKCE (S256) against the service's authorization server, on
 * oauth4webapi: the authorization URL, the code exchange, refresh (tokens rotate at each use, so
 * every refresh hands you a token set to store) and revocation. Clients are public: no secret.
 */
export class OAuthClient {
  private readonly options: OAuthOptions;
  private readonly issuer: URL;
  private readonly client: oauth.Client;
  private metadata: Promise<oauth.AuthorizationServer> | undefined;

  constructor(options: OAuthOptions) {
    this.options = options;
    this.issuer = new URL(`${options.baseUrl.replace(/\/+$/, '')}/api/auth`);
    this.client = { client_id: options.clientId };
  }

  /** The resource (RFC 8707) every token is for: the API's address. */
  get resource(): string {
    return this.options.baseUrl.replace(/\/+$/, '');
  }

  private requestOptions(signal?: AbortSignal) {
    const limit = AbortSignal.timeout(this.options.timeoutMs ?? 30_000);
    return {
      ...(this.options.fetch ? { [oauth.customFetch]: this.options.fetch } : {}),
      ...(this.options.allowInsecureRequests ? { [oauth.allowInsecureRequests]: true } : {}),
      signal: signal ? AbortSignal.any([signal, limit]) : limit,
    };
  }

  /** The authorization server's metadata (RFC 8414), read once. */
  server(signal?: AbortSignal): Promise<oauth.AuthorizationServer> {
    this.metadata ??= oauth
      .discoveryRequest(this.issuer, { algorithm: 'oauth2', ...this.requestOptions(signal) })
      .then((response) => oauth.processDiscoveryResponse(this.issuer, response));
    this.metadata.catch(() => (this.metadata = undefined));
    return this.metadata;
  }

  /** Where to send the owner's browser, with a fresh PKCE verifier and state. */
  async authorizationUrl(options: {
    scope: 'everything:read' | 'everything:write' | (string & {});
    signal?: AbortSignal;
  }): Promise<AuthorizationRequest> {
    const as = await this.server(options.signal);
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: this.options.clientId,
      redirect_uri: this.options.redirectUri,
      response_type: 'code',
      scope: options.scope,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      resource: this.resource,
    }).toString();
    return { url: url.href, state, codeVerifier };
  }

  /**
   * Exchanges the code the browser brought back to `redirectUri` (pass the whole callback URL) for
   * tokens. Checks `state` and `iss` (RFC 9207); a refusal by the owner (`access_denied`) throws.
   */
  async exchangeCode(
    callbackUrl: string | URL,
    request: Pick<AuthorizationRequest, 'state' | 'codeVerifier'>,
    signal?: AbortSignal,
  ): Promise<TokenSet> {
    const as = await this.server(signal);
    const params = oauth.validateAuthResponse(as, this.client, new URL(callbackUrl), request.state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      this.client,
      oauth.None(),
      params,
      this.options.redirectUri,
      request.codeVerifier,
      this.requestOptions(signal),
    );
    return this.tokenSet(await oauth.processAuthorizationCodeResponse(as, this.client, response).catch(tokenError));
  }

  /** New tokens for a refresh token; the one sent is used up (rotation): store the answer's. */
  async refresh(refreshToken: string, signal?: AbortSignal): Promise<TokenSet> {
    const as = await this.server(signal);
    const response = await oauth.refreshTokenGrantRequest(as, this.client, oauth.None(), refreshToken, this.requestOptions(signal));
    return this.tokenSet(await oauth.processRefreshTokenResponse(as, this.client, response).catch(tokenError));
  }

  /** Ends the connection (RFC 7009): either of its tokens revokes both. */
  async revoke(token: string, signal?: AbortSignal): Promise<void> {
    const as = await this.server(signal);
    const response = await oauth.revocationRequest(as, this.client, oauth.None(), token, this.requestOptions(signal));
    await oauth.processRevocationResponse(response).catch(tokenError);
  }

  /** Credentials for CmsClient that refresh the access token before it expires, and once after a 401. */
  session(tokens: TokenSet, options: SessionOptions = {}): OAuthSession {
    return new OAuthSession(this, tokens, options, this.options.now ?? Date.now);
  }

  private tokenSet(response: oauth.TokenEndpointResponse): TokenSet {
    const now = (this.options.now ?? Date.now)();
    return {
      access_token: response.access_token,
      refresh_token: response.refresh_token,
      expires_at: response.expires_in === undefined ? undefined : now + response.expires_in * 1000,
      scope: response.scope,
    };
  }
}

/**
 * Bearer credentials that renew themselves. Refreshes are serialised: the service treats two
 * refreshes with one token as a replay and revokes the connection, so concurrent requests share
 * one refresh.
 */
export class OAuthSession implements Credentials {
  private refreshing: Promise<TokenSet> | undefined;

  constructor(
    private readonly oauthClient: OAuthClient,
    private current: TokenSet,
    private readonly options: SessionOptions,
    private readonly now: () => number,
  ) {}

  get tokens(): TokenSet {
    return this.current;
  }

  async authorize(headers: Headers, signal?: AbortSignal): Promise<void> {
    const early = this.options.refreshEarlyMs ?? 60_000;
    if (this.current.expires_at !== undefined && this.current.refresh_token && this.now() >= this.current.expires_at - early) {
      await this.refresh(signal);
    }
    headers.set('authorization', `Bearer ${this.current.access_token}`);
  }

  async unauthorized(_response: Response, sent: Headers, signal?: AbortSignal): Promise<boolean> {
    if (!this.current.refresh_token) return false;
    // Sent with a token another request has replaced meanwhile: try again with the new one. A
    // second refresh would only rotate the tokens once more.
    if (sent.get('authorization') !== `Bearer ${this.current.access_token}`) return true;
    await this.refresh(signal);
    return true;
  }

  /** Refreshes now (one refresh at a time) and stores the new tokens through `onTokens`. */
  refresh(signal?: AbortSignal): Promise<TokenSet> {
    this.refreshing ??= (async () => {
      try {
        const next = await this.oauthClient.refresh(this.current.refresh_token ?? '', signal);
        this.current = { ...next, refresh_token: next.refresh_token ?? this.current.refresh_token };
        await this.options.onTokens?.(this.current);
        return this.current;
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }

  /** Revokes the connection (both tokens). */
  revoke(signal?: AbortSignal): Promise<void> {
    return this.oauthClient.revoke(this.current.refresh_token ?? this.current.access_token, signal);
  }
}
