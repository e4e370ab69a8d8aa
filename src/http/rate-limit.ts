import type { FastifyInstance } from 'fastify';
import { TooManyRequestsError } from '../errors.js';
import type { Hit, RateLimitStore } from '../oauth/rate-limit.js';

export const RATE_WINDOW_SECONDS = 60;

/**
 * The fields of draft-ietf-httpapi-ratelimit-headers in its structured-field form: the policy
 * (quota q per window w seconds) and what is left of it (r remaining, t seconds to the reset).
 * @fastify/rate-limit writes the older draft's x-ratelimit-limit/-remaining/-reset instead.
 */
export function rateLimitFields(policy: string, quota: number, hit: Hit): Record<string, string> {
  return {
    'ratelimit-policy': `"${policy}";q=${quota};w=${RATE_WINDOW_SECONDS}`,
    ratelimit: `"${policy}";r=${Math.max(0, quota - hit.count)};t=${hit.retryAfter}`,
  };
}

/**
 * RATE_LIMIT_API: requests per minute per credential (an API key, or an OAuth connection, so
 * one application cannot use up another's share of a website). Runs as an onRequest hook added
 * after installAuthentication's, so the principal is known; public routes are not counted.
 */
export function installApiRateLimit(app: FastifyInstance, perMinute: number, store: RateLimitStore): void {
  if (perMinute === 0) return;
  app.addHook('onRequest', async (request, reply) => {
    const principal = request.principal;
    if (!principal) return;
    const hit = await store.hit(`api:${principal.method}:${principal.subject}`, RATE_WINDOW_SECONDS);
    reply.headers(rateLimitFields('api', perMinute, hit));
    if (hit.count > perMinute) {
      reply.header('retry-after', String(hit.retryAfter));
      throw new TooManyRequestsError(
        `These credentials made more than ${perMinute} requests this minute; try again in ${hit.retryAfter} seconds.`,
      );
    }
  });
}
