import type { Credentials } from './auth.js';
import { ProblemError } from './errors.js';

export interface RetryOptions {
  /** Retries after the first attempt (default 2; 0 switches retrying off). */
  retries?: number;
  /** The longest wait the client accepts; a `Retry-After` asking for more is not waited for (default 60 s). */
  maxDelayMs?: number;
  /** The wait when a 429 or 503 gives no `Retry-After` (default 1 s, doubled at each retry). */
  baseDelayMs?: number;
}

export interface TransportOptions {
  /** The service's address, e.g. `https://cms.example.net` (a path prefix such as `/webapps` is kept). */
  baseUrl: string;
  credentials?: Credentials | undefined;
  /** Each attempt's limit, in milliseconds (default 30 s; a long-poll adds its wait). */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** A fetch of your own (a proxy agent, a test double); the global fetch by default. */
  fetch?: typeof fetch;
  /** Sent with every request, e.g. a `user-agent` or an `x-request-id` prefix of your own. */
  headers?: Record<string, string>;
}

export interface RequestOptions {
  /** Ends the request (and any retry wait) when aborted. */
  signal?: AbortSignal | undefined;
  /** This request's limit, instead of the client's `timeoutMs`. */
  timeoutMs?: number | undefined;
}

export interface Call extends RequestOptions {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined> | undefined;
  json?: unknown;
  form?: FormData;
  headers?: Record<string, string | undefined>;
}

/** An answer and its body, read in full. */
export interface Answer {
  response: Response;
  text: string;
  /** The request's headers, as sent. */
  sent: Headers;
}

/** Methods whose retry cannot apply a change twice (RFC 9110 §9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);
/** Statuses that say "later": rate limited, or briefly unavailable (an image pool full, a restart). */
const RETRYABLE = new Set([429, 503]);

/** The wait a `Retry-After` asks for, in milliseconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Resolves after `ms`, or rejects with the signal's reason when it is aborted first. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Sends requests: credentials, timeouts, retries of idempotent requests on 429 and 503, problems as errors. */
export class Transport {
  readonly baseUrl: string;
  private readonly options: TransportOptions;

  constructor(options: TransportOptions) {
    this.options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
  }

  /** Each attempt's limit unless a call gives its own, in milliseconds. */
  get timeoutMs(): number {
    return this.options.timeoutMs ?? 30_000;
  }

  url(path: string, query?: Call['query']): string {
    const url = new URL(this.baseUrl + path);
    for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    return url.href;
  }

  /** The answer of a 2xx or 304, its body read; any other status throws a ProblemError. */
  async send(call: Call): Promise<Answer> {
    const retry = this.options.retry ?? {};
    const retries = IDEMPOTENT.has(call.method) ? (retry.retries ?? 2) : 0;
    const maxDelay = retry.maxDelayMs ?? 60_000;
    let renewed = false;
    for (let attempt = 0; ; attempt++) {
      const answer = await this.attempt(call);
      const { response } = answer;
      if (response.ok || response.status === 304) return answer;
      // A credential that renewed itself (an expired OAuth access token) gets one more try.
      if (response.status === 401 && !renewed && this.options.credentials?.unauthorized) {
        renewed = true;
        if (await this.options.credentials.unauthorized(response, answer.sent, call.signal)) {
          attempt--;
          continue;
        }
      }
      if (RETRYABLE.has(response.status) && attempt < retries) {
        const asked = retryAfterMs(response.headers.get('retry-after'));
        const delay = asked ?? (retry.baseDelayMs ?? 1000) * 2 ** attempt;
        if (delay <= maxDelay) {
          await sleep(delay, call.signal);
          continue;
        }
      }
      throw ProblemError.from(response, answer.text);
    }
  }

  /**
   * One request, its body read within the time limit: the limit covers a server that sends the
   * headers and then stalls. The timer is the global setTimeout, so a test can drive it.
   */
  private async attempt(call: Call): Promise<Answer> {
    call.signal?.throwIfAborted();
    const headers = new Headers(this.options.headers);
    headers.set('accept', 'application/json');
    for (const [key, value] of Object.entries(call.headers ?? {})) if (value !== undefined) headers.set(key, value);
    let body: string | FormData | undefined;
    if (call.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(call.json);
    } else if (call.form) {
      body = call.form; // fetch writes the multipart boundary into content-type.
    }
    await this.options.credentials?.authorize(headers, call.signal);
    const limit = new AbortController();
    const ms = call.timeoutMs ?? this.timeoutMs;
    const timer = setTimeout(() => limit.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')), ms);
    const signal = call.signal ? AbortSignal.any([call.signal, limit.signal]) : limit.signal;
    try {
      const fetcher = this.options.fetch ?? globalThis.fetch;
      const response = await fetcher(this.url(call.path, call.query), { method: call.method, headers, body, signal });
      return { response, text: await response.text(), sent: headers };
    } finally {
      clearTimeout(timer);
    }
  }

  /** A JSON answer's body; undefined for a 204 or 304. */
  async json<T>(call: Call): Promise<{ body: T; response: Response }> {
    const { response, text } = await this.send(call);
    return { body: (text ? JSON.parse(text) : undefined) as T, response };
  }
}
