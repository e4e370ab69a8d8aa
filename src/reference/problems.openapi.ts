import type { RouteOptions } from 'fastify';
import { Type } from 'typebox';
import { PROBLEM_TYPE_BASE } from '../http/problem.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Error statuses the route answers beyond those its shape implies (a scope: 401 and 403; a
     * query, path or body: 400; a path parameter such as `:id`: 404 and 414; POST and DELETE: see
     * problemStatuses), e.g. 409 on DELETE /api/page for a page that still has sub pages.
     * Documentation only: the OpenAPI document lists them; the answers come from the AppErrors
     * the route throws.
     */
    problems?: readonly number[];
    /** Documentation only: the route honours If-Match and If-None-Match, and a write answers the record's ETag. */
    conditional?: boolean;
    /** Documentation only: a rate limit counts the route's answers (a route with a scope is always counted). */
    counted?: boolean;
  }
}

const PROBLEM_REF = '#/components/schemas/Problem';

/** RFC 9457 body of every error of the API, and of the OAuth endpoints' 429 only: src/http/problem.ts. */
export const Problem = Type.Object(
  {
    type: Type.String({ description: `\`${PROBLEM_TYPE_BASE}<slug>\`, a relative URI; docs/errors.md lists every slug` }),
    title: Type.String({ description: 'Short summary of the problem type, e.g. "Not found"' }),
    status: Type.Integer({ description: 'The HTTP status code' }),
    detail: Type.String({ description: 'What went wrong with this request' }),
    instance: Type.String({ description: 'The request path, without the query string' }),
    errors: Type.Optional(
      Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), {
        description: 'validation-failed (400) only: each refused field (a body field, a query parameter, or `data` in a form) and why',
      }),
    ),
    reference: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: '401 on a content endpoint only: the endpoint reference, as JSON' }),
    ),
  },
  { description: 'An RFC 9457 problem (application/problem+json)' },
);

/** What each status means on this API, as the OpenAPI response descriptions say it. */
const PROBLEM_STATUSES: Readonly<Record<number, string>> = {
  400: 'The query, path or body is not valid (validation-failed, with errors) or the request is malformed (bad-request)',
  401: 'No credentials, or credentials that are not valid; WWW-Authenticate names the accepted schemes',
  403: 'The credentials lack the scope this operation needs (WWW-Authenticate: error="insufficient_scope")',
  404: 'The id (or name) names nothing on this website; another website’s record counts as absent',
  409: 'The write conflicts with other records, e.g. a page_alias or info_filename another record has',
  412: 'If-Match does not name the record’s current ETag, or If-None-Match does; nothing was written',
  413: 'The body, a form field or an uploaded file is too large, or the upload has too many files',
  414: 'A path parameter is longer than 100 characters (uri-too-long)',
  415: 'The body’s content type is not accepted, or an uploaded file is not a supported image',
  429: 'More requests this minute than the rate limit allows (RATE_LIMIT_API per credential; for image variants RATE_LIMIT_IMAGE_VARIANTS per address); Retry-After says when to try again',
  503: 'The database, or the image variant queue, is busy or unavailable for a moment; Retry-After says when to try again',
};

type DocumentedRoute = Pick<RouteOptions, 'method' | 'url' | 'schema' | 'config'>;

/** The error statuses a route can answer, from its shape, plus those it declares in `config.problems`. */
export function problemStatuses(route: DocumentedRoute): number[] {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const schema = route.schema ?? {};
  const statuses = new Set<number>(route.config?.problems ?? []);
  const add = (...codes: number[]) => {
    for (const code of codes) statuses.add(code);
  };
  // Every authenticated route counts against its credential's RATE_LIMIT_API, and reads the
  // database, which may be unavailable for a moment (503 with Retry-After).
  if (route.config?.scope) add(401, 403, 429, 503);
  if (schema.querystring || schema.params || schema.body) add(400);
  // A path parameter (`:id`, an image's `:name`) names something that may not exist, and the
  // router refuses one over its maxParamLength (100 characters) before the route runs.
  if (/\/:\w/.test(route.url)) add(404, 414);
  // An update names an id that may not exist; body limits and media types apply.
  if (methods.includes('POST') || methods.includes('PATCH')) add(404, 409, 413, 415);
  if (methods.includes('DELETE')) add(404);
  // If-Match or If-None-Match that does not hold.
  if (route.config?.conditional) add(412);
  return [...statuses].sort((a, b) => a - b);
}

/** OpenAPI responses for those statuses: problem+json bodies with the shared Problem schema. */
export function problemResponses(statuses: readonly number[]) {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: PROBLEM_STATUSES[status] ?? 'See docs/errors.md',
        content: { 'application/problem+json': { schema: { $ref: PROBLEM_REF } } },
      },
    ]),
  );
}
