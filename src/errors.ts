/** A failure a client can act on. One handler turns these into RFC 9457 problem+json. */
export class AppError extends Error {
  override name = 'AppError';
  constructor(
    readonly status: number,
    readonly title: string,
    detail: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(detail);
  }

  /** Short, stable slug used in the problem `type` URI. */
  get type(): string {
    return this.title
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '');
  }
}

export interface FieldError {
  readonly field: string;
  readonly message: string;
}

export class ValidationError extends AppError {
  constructor(
    readonly errors: readonly FieldError[],
    detail = errors.map((e) => `${e.field}: ${e.message}`).join('; '),
  ) {
    super(400, 'Validation failed', detail, { errors });
  }
}

export class BadRequestError extends AppError {
  constructor(detail: string) {
    super(400, 'Bad request', detail);
  }
}

export class NotFoundError extends AppError {
  constructor(detail: string) {
    super(404, 'Not found', detail);
  }
}

export class ConflictError extends AppError {
  constructor(detail: string) {
    super(409, 'Conflict', detail);
  }
}

export class PreconditionFailedError extends AppError {
  constructor(detail: string) {
    super(412, 'Precondition failed', detail);
  }
}

export class UnauthorizedError extends AppError {
  constructor(
    detail: string,
    /** RFC 6750 error code for WWW-Authenticate (invalid_token), if any. */
    readonly bearerError?: string,
  ) {
    super(401, 'Unauthorized', detail);
  }
}

export class ForbiddenError extends AppError {
  constructor(
    detail: string,
    readonly requiredScope?: string,
  ) {
    super(403, 'Forbidden', detail);
  }
}

export class TooManyRequestsError extends AppError {
  constructor(detail: string) {
    super(429, 'Too many requests', detail);
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(detail: string) {
    super(413, 'Payload too large', detail);
  }
}

export class UnsupportedMediaTypeError extends AppError {
  constructor(detail: string) {
    super(415, 'Unsupported media type', detail);
  }
}

/** A feed cursor older than the history kept: the changes after it are gone, so the client must resync. */
export class CursorExpiredError extends AppError {
  constructor(detail: string) {
    super(410, 'Cursor expired', detail);
  }
}

/**
 * A dependency (the database, Redis) cannot answer now; the client may try again after
 * `retryAfter` seconds, which the problem handler sends as Retry-After.
 */
export class ServiceUnavailableError extends AppError {
  constructor(
    detail: string,
    readonly retryAfter = 5,
  ) {
    super(503, 'Service unavailable', detail);
  }
}

/** A request well formed, whose content (an image's pixel data) cannot be processed. */
export class UnprocessableContentError extends AppError {
  constructor(detail: string) {
    super(422, 'Unprocessable content', detail);
  }
}
