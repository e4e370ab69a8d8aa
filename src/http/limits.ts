/** The request size limits the whole service holds to; the OpenAPI document bounds its strings by them. */

/** The largest request body (Fastify's bodyLimit); past it a 413. */
export const BODY_LIMIT_BYTES = 5 * 1024 * 1024;

/** Node's limit on the request line and headers together (--max-http-header-size, 16 KiB by default). */
export const HEADER_LIMIT_BYTES = 16 * 1024;

/** The longest path parameter the router takes (its maxParamLength); past it a 414. No id or generated image name is as long. */
export const MAX_PARAM_LENGTH = 100;
