/**
 * How a request is authenticated. The client calls `authorize` before every attempt (so a token
 * refreshed meanwhile is used), and `unauthorized` after a 401 with the headers that request was
 * sent with: a credential that can renew itself (an OAuth session) does so and answers true, and
 * the request is sent once more.
 */
export interface Credentials {
  authorize(headers: Headers, signal?: AbortSignal): Promise<void> | void;
  unauthorized?(response: Response, sent: Headers, signal?: AbortSignal): Promise<boolean>;
}

/** A website's API ID and key, sent as `X-Api-Id` and `X-Api-Key` (never in the URL). */
export function apiKey(apiId: string, key: string): Credentials {
  return {
    authorize(headers) {
      headers.set('x-api-id', apiId);
      headers.set('x-api-key', key);
    },
  };
}

/** A bearer token: a string, or a function asked before each request (for tokens you renew yourself). */
export function bearer(token: string | (() => string | Promise<string>)): Credentials {
  return {
    async authorize(headers) {
      headers.set('authorization', `Bearer ${typeof token === 'string' ? token : await token()}`);
    },
  };
}
