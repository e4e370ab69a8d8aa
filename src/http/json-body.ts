import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { BadRequestError, UnsupportedMediaTypeError } from '../errors.js';

/** A key that could change an object's prototype where the body is merged is refused, never dropped. */
const FORBIDDEN_KEYS = { protoAction: 'error', constructorAction: 'error' } as const;

/** The `charset` parameter of a Content-Type, if it has one. */
function charsetOf(contentType: string | undefined): string | undefined {
  return /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType ?? '')?.[1];
}

/**
 * JSON bodies, read here rather than by Fastify's own parser so that a refusal says what is wrong:
 * the syntax error, or the `__proto__` or `constructor.prototype` key (refused like Fastify refuses
 * it, but no longer reported as "not valid JSON"). JSON is UTF-8 (RFC 8259 §8.1): a body declared
 * in another charset is a 415, where it was read as UTF-8 and stored garbled.
 */
export function installJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    try {
      done(null, jsonBody(request.headers['content-type'], body as string));
    } catch (error) {
      done(error as Error);
    }
  });
}

/** A JSON body's value; throws the 400 or 415 that says what is wrong with it. */
export function jsonBody(contentType: string | undefined, body: string): unknown {
  const charset = charsetOf(contentType);
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new UnsupportedMediaTypeError(`JSON bodies are UTF-8: send charset=utf-8 or no charset, not ${charset || 'an empty one'}.`);
  }
  if (body === '') throw new BadRequestError('The body is empty: send a JSON object.');
  try {
    return secureJson.parse(body, undefined, FORBIDDEN_KEYS);
  } catch (error) {
    const forbidden = error instanceof SyntaxError && error.message.includes('forbidden prototype property');
    throw new BadRequestError(
      forbidden
        ? 'The body holds a "__proto__" or "constructor.prototype" key, which is refused.'
        : `The body is not valid JSON: ${(error as Error).message}.`,
    );
  }
}
