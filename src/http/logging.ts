import type { FastifyRequest } from 'fastify';
import type { LogLevel } from '../config.js';

/** Query parameters that can carry secrets; they are logged as [redacted]. */
const SECRET_PARAMS = /([?&](?:access_token|refresh_token|code|code_verifier|token|password|api_key|apiKey)=)[^&]*/gi;

export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMS, '$1[redacted]');
}

export function loggerOptions(level: LogLevel) {
  return {
    level,
    // Headers are never logged whole; these paths also cover anything a handler logs by mistake.
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]', 'res.headers["set-cookie"]'],
      censor: '[redacted]',
    },
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
