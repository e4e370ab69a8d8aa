import type { FastifyRequest } from 'fastify';
import type pino from 'pino';
import type { LogLevel } from '../config.js';

/** Query parameters that can carry secrets; they are logged as [redacted]. */
const SECRET_PARAMS = /([?&](?:access_token|refresh_token|code|code_verifier|token|password|api_key|apiKey)=)[^&]*/gi;

/** Headers that carry credentials, as pino redact path segments. */
const SECRET_HEADERS = ['.authorization', '.cookie', '["x-api-key"]', '["set-cookie"]', '["proxy-authorization"]'];

export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMS, '$1[redacted]');
}

/** `stream`: where lines go; pino's default (stdout, written synchronously) when absent. */
export function loggerOptions(level: LogLevel, stream?: pino.DestinationStream) {
  return {
    level,
    ...(stream ? { stream } : {}),
    // Our serializers never log headers, but plugins do: @fastify/multipart logs its busboy options
    // at trace, request headers included ({ busboyOptions: { headers } }). Redacting by header name
    // at the top or up to two levels down covers that and whatever else logs `{ x: { headers } }`, without
    // knowing each plugin's field names.
    redact: { paths: SECRET_HEADERS.flatMap((name) => [`headers${name}`, `*.headers${name}`, `*.*.headers${name}`]), censor: '[redacted]' },
    serializers: {
      req(request: FastifyRequest) {
        return {
          method: request.method,
          url: redactUrl(request.url),
          remoteAddress: request.ip,
        };
      },
    },
  };
}
