import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CorsOrigins } from '../address-settings.js';
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable, isUnstorableText } from '../db/errors.js';
import {
  AppError,
  BadRequestError,
  ForbiddenError,
  NotFoundError,
  ServiceUnavailableError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../errors.js';
import { exposeToOtherOrigins } from './cors.js';
import { deleteWithBody } from './json-body.js';
import { BODY_LIMIT_BYTES, HEADER_LIMIT_BYTES, MAX_PARAM_LENGTH } from './limits.js';
import { pathOf, RouteMethods } from './route-methods.js';
import { fieldErrors } from './validation.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The media types the route's body may have, as its 415 names them; application/json when absent. */
    bodyTypes?: string;
  }
}

/** Problem types are relative URI references (RFC 9457 §3.1.1); docs/errors.md lists them. */
export const PROBLEM_TYPE_BASE = '/problems/';

interface ProblemOptions {
  /** Adds the WWW-Authenticate challenge to 401 and 403 answers. */
  challenge(error: UnauthorizedError | ForbiddenError, request: FastifyRequest): string;
  /** Extra members for a 401 body (the endpoint's reference description). */
  unauthorizedExtra?(request: FastifyRequest): Record<string, unknown> | undefined;
}

/** The RFC 9457 body of an error, for `path` (the request's, without its query string). */
export function problemBody(error: AppError, path: string): Record<string, unknown> {
  return {
    type: `${PROBLEM_TYPE_BASE}${error.type}`,
    title: error.title,
    status: error.status,
    detail: error.message,
    instance: path.split('?')[0],
    ...error.extra,
  };
}

function sendProblem(reply: FastifyReply, error: AppError, extra: Record<string, unknown> = {}): FastifyReply {
  if (error instanceof ServiceUnavailableError) reply.header('retry-after', String(error.retryAfter));
  return reply
    .code(error.status)
    .type('application/problem+json')
    .header('cache-control', 'no-store')
    .send({ ...problemBody(error, reply.request.url), ...extra });
}

/** Titles of Fastify's (and its plugins') 4xx errors by status; any other 4xx is titled Bad request. */
export const FASTIFY_ERROR_TITLES: Readonly<Record<number, string>> = {
  400: 'Bad request',
  404: 'Not found',
  405: 'Method not allowed',
  406: 'Not acceptable',
  408: 'Request timeout',
  413: 'Payload too large',
  414: 'URI too long',
  415: 'Unsupported media type',
  429: 'Too many requests',
  431: 'Request header fields too large',
};

/**
 * Whether the header overflow Node's parser reports is the request line's: the URL alone filled
 * what the headers may take, so the answer is 414 URI Too Long, not 431.
 */
function requestLineTooLong(error: NodeJS.ErrnoException & { rawPacket?: Buffer }): boolean {
  const packet = error.rawPacket;
  return packet !== undefined && !packet.subarray(0, HEADER_LIMIT_BYTES).includes('\r\n');
}

/** What was wrong, and what to send instead, for each refusal of Node's HTTP parser. */
const PARSER_REFUSALS: Readonly<Record<number, string>> = {
  400: 'The request is not valid HTTP (for example a URL with spaces or raw non-ASCII characters): send the URL percent-encoded (%20 for a space, %C3%A9 for é).',
  408: 'The request did not arrive in time (its headers within 20 seconds, all of it within HTTP_REQUEST_TIMEOUT_SECONDS): send it again, with a smaller body or on a faster connection.',
  414: `The URL is longer than the ${HEADER_LIMIT_BYTES / 1024} KiB the server reads for a request's head: shorten the query string, or ask for fewer records at a time.`,
  431: `The request's headers are larger than the ${HEADER_LIMIT_BYTES / 1024} KiB the server reads: send fewer or smaller headers (large cookies are the usual cause).`,
};

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (bytes that are not HTTP, a raw
 * non-ASCII URL, headers over the size limit, a request that took too long) get a problem+json
 * like every other error, written straight to the socket, then the connection is closed.
 */
export function clientErrorAnswer(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const status =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? (requestLineTooLong(error) ? 414 : 431) : 400;
  const title = FASTIFY_ERROR_TITLES[status] ?? 'Bad request';
  const body = JSON.stringify({
    type: `${PROBLEM_TYPE_BASE}${new AppError(status, title, '').type}`,
    title,
    status,
    detail: PARSER_REFUSALS[status],
  });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json\r\nCache-Control: no-store\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** Fastify's own errors (bad JSON, wrong content type, too large) as AppErrors. */
const unstorableText = () =>
  new BadRequestError(
    'A text value holds a character that cannot be stored: the NUL character (U+0000, %00). Remove it from the value and send it again.',
  );

function fromFastifyError(error: FastifyError, request?: FastifyRequest): AppError | undefined {
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    if (request?.method === 'DELETE' && !request.is404) return deleteWithBody();
    const accepted = request?.routeOptions.config?.bodyTypes ?? 'application/json';
    const sent = request?.headers['content-type'];
    return new UnsupportedMediaTypeError(
      `${sent ? `A body of type ${sent.split(';')[0]} is not accepted here` : 'The body has no Content-Type'}: send ${accepted}.`,
    );
  }
  if (error.validation) {
    return new ValidationError(fieldErrors(error.validation as never, error.validationContext));
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    // The error does not say which parser's limit it met (the sign-in pages' forms take far less), so the detail names the API's.
    return new AppError(
      413,
      'Payload too large',
      `The body is larger than this address takes (on the content API, ${BODY_LIMIT_BYTES / 1024 / 1024} MiB: ${BODY_LIMIT_BYTES} bytes): send less in one request.`,
    );
  }
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    // The router's message quotes the URL, query string (and any apiKey in it) included.
    return new AppError(
      414,
      'URI too long',
      `A path parameter is longer than ${MAX_PARAM_LENGTH} characters, which no id or image name is: check the path.`,
    );
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new AppError(status, FASTIFY_ERROR_TITLES[status] ?? 'Bad request', error.message);
  }
  return undefined;
}

/**
 * Fastify's `frameworkErrors`: the router refuses a path before any route or error handler is
 * chosen (a broken percent-encoding such as `/api/page/%zz`: 400; a path parameter longer than
 * the router's maxParamLength: 414) and would otherwise answer with JSON of its own.
 */
export function frameworkErrorAnswer(origins: CorsOrigins) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    // The router refused the request before any hook ran, so the hooks that give every other
    // answer these headers did not: they are set here.
    reply.header('x-request-id', request.id);
    exposeToOtherOrigins(request, reply, origins);
    // The router's message quotes the whole URL, query string and all, and a query string may hold
    // credentials (apiKey): the answer names the path only, as every problem's instance does.
    if (error.code === 'FST_ERR_BAD_URL') {
      return sendProblem(
        reply,
        new BadRequestError(
          `The path ${pathOf(request.url)} is not valid: a % must begin a percent-encoded UTF-8 character (%20, %C3%A9).`,
        ),
      );
    }
    return sendProblem(reply, fromFastifyError(error) ?? new AppError(400, 'Bad request', error.message));
  };
}

/** The 404 of an address no route serves, here or under /api/auth: it points to the list of those that exist. */
export function noRoute(method: string, path: string): NotFoundError {
  return new NotFoundError(`No route for ${method} ${path}: /api/openapi.json lists the API's addresses and methods.`);
}

export function installProblemHandler(app: FastifyInstance, options: ProblemOptions): void {
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'the database is unavailable; answered 503');
      return sendProblem(
        reply,
        new ServiceUnavailableError('The database is unavailable for a moment; try again shortly.', DATABASE_RETRY_AFTER_SECONDS),
      );
    }
    const appError = error instanceof AppError ? error : isUnstorableText(error) ? unstorableText() : fromFastifyError(error, request);
    if (!appError) {
      request.log.error({ err: error }, 'unhandled error');
      return sendProblem(reply, new AppError(500, 'Internal server error', 'The server failed to answer this request.'));
    }
    if (appError instanceof UnauthorizedError || appError instanceof ForbiddenError) {
      reply.header('www-authenticate', options.challenge(appError, request));
    }
    const extra = appError instanceof UnauthorizedError ? options.unauthorizedExtra?.(request) : undefined;
    return sendProblem(reply, appError, extra);
  });
  // A known path asked with a method it does not take is a 405 naming the ones it does (RFC 9110
  // §15.5.6), not a 404 that says the path is not there.
  const routes = new RouteMethods();
  app.addHook('onRoute', (route) => routes.add(route));
  app.setNotFoundHandler((request, reply) => {
    const path = pathOf(request.url);
    const methods = routes.of(path);
    // A route of this method that found nothing (callNotFound) is a 404 like any other.
    if (methods.length > 0 && !methods.includes(request.method)) {
      // Every known path answers OPTIONS (below), so Allow names it too.
      const allowed = [...new Set([...methods, 'OPTIONS'])];
      reply.header('allow', allowed.join(', '));
      // An OPTIONS that is not a CORS preflight (cors.ts answers those) asks which methods the path
      // takes (RFC 9110 §9.3.7): Allow is the answer, with no body.
      if (request.method === 'OPTIONS') return reply.code(204).send();
      return sendProblem(
        reply,
        new AppError(405, 'Method not allowed', `${path} does not take ${request.method}: use ${allowed.join(', ')}.`),
      );
    }
    return sendProblem(reply, noRoute(request.method, path));
  });
}
