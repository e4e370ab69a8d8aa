/** One refused field of a `validation-failed` problem. */
export interface FieldError {
  field: string;
  message: string;
}

/**
 * An error answer of the API as an exception: the RFC 9457 problem's members, and the request id
 * to quote when reporting it. Test `type` (`/problems/not-found`), not `detail`: the detail's
 * wording may change. An answer that is not a problem (an OAuth endpoint's RFC 6749 error, a
 * proxy's HTML page) still becomes a ProblemError, with `type` `about:blank` and the status text.
 */
export class ProblemError extends Error {
  override readonly name = 'ProblemError';
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly instance: string | undefined;
  /** The `X-Request-Id` of the answer: the id its log lines carry on the server. */
  readonly requestId: string | undefined;
  /** `validation-failed` only: each refused field. */
  readonly errors: FieldError[];
  /** The answer's parsed JSON body, when it had one. */
  readonly body: unknown;
  /** The answer's headers (`Retry-After`, `WWW-Authenticate`, `ETag`…). */
  readonly headers: Headers;

  constructor(init: {
    type: string;
    title: string;
    status: number;
    detail: string;
    instance?: string | undefined;
    requestId?: string | undefined;
    errors?: FieldError[];
    body?: unknown;
    headers?: Headers;
  }) {
    super(`${init.status} ${init.title}: ${init.detail}`);
    this.type = init.type;
    this.title = init.title;
    this.status = init.status;
    this.detail = init.detail;
    this.instance = init.instance;
    this.requestId = init.requestId;
    this.errors = init.errors ?? [];
    this.body = init.body;
    this.headers = init.headers ?? new Headers();
  }

  /** An error answer, from its response and its body's text. */
  static from(response: Response, text: string): ProblemError {
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    const requestId = response.headers.get('x-request-id') ?? undefined;
    const object = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    const string = (value: unknown) => (typeof value === 'string' ? value : undefined);
    // RFC 6749 errors (the OAuth endpoints): `error` and `error_description`.
    const oauthError = string(object.error);
    return new ProblemError({
      type: string(object.type) ?? 'about:blank',
      title: string(object.title) ?? oauthError ?? (response.statusText || `HTTP ${response.status}`),
      status: response.status,
      detail: string(object.detail) ?? string(object.error_description) ?? text.slice(0, 200),
      instance: string(object.instance),
      requestId,
      errors: Array.isArray(object.errors) ? (object.errors as FieldError[]) : [],
      body,
      headers: response.headers,
    });
  }
}

/** True when `error` is a ProblemError of this type slug (`'not-found'`) or full type (`'/problems/not-found'`). */
export function isProblem(error: unknown, type?: string): error is ProblemError {
  if (!(error instanceof ProblemError)) return false;
  return type === undefined || error.type === type || error.type === `/problems/${type}`;
}
