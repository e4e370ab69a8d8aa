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
 * in another charset is a 415, and bytes that are not UTF-8 a 400, where they were read as
 * U+FFFD and stored garbled. A DELETE takes no body (deleteBody): many clients send Content-Type
 * with every request, so an empty one is no body, not an error.
 */
export function installJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // A path no route serves is a 404 whatever its body.
    if (request.method === 'DELETE' && !request.is404) return done(deleteBody(body as Buffer), undefined);
    try {
      done(null, jsonBody(request.headers['content-type'], body as Buffer));
    } catch (error) {
      done(error as Error);
    }
  });
}

/**
 * A DELETE takes no body (RFC 9110 §9.3.5 gives it none): refused with a 400 rather than ignored,
 * since a client that sends one expects something of it (a filter, credentials in a form) that
 * nothing reads. An empty body is no body, whatever its Content-Type.
 */
export function deleteBody(body: Buffer | string): BadRequestError | null {
  return body.length === 0 ? null : deleteWithBody();
}

export function deleteWithBody(): BadRequestError {
  return new BadRequestError(
    'A DELETE takes no body: the path names the record, and credentials go in headers (or the apiID and apiKey query parameters). Send it without a body.',
  );
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A JSON body's value; throws the 400 or 415 that says what is wrong with it. */
export function jsonBody(contentType: string | undefined, bytes: Buffer): unknown {
  const charset = charsetOf(contentType);
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new UnsupportedMediaTypeError(`JSON bodies are UTF-8: send charset=utf-8 or no charset, not ${charset || 'an empty one'}.`);
  }
  if (bytes.length === 0) throw new BadRequestError('The body is empty: send a JSON object.');
  let body: string;
  try {
    body = utf8.decode(bytes);
  } catch {
    throw new BadRequestError('The body is not valid UTF-8: JSON is sent as UTF-8 (RFC 8259).');
  }
  return jsonText(body);
}

/** The value of JSON text; a syntax error, or a `__proto__` or `constructor.prototype` key, is a 400 that says which. */
export function jsonText(text: string): unknown {
  try {
    return secureJson.parse(text, undefined, FORBIDDEN_KEYS);
  } catch (error) {
    const forbidden = error instanceof SyntaxError && error.message.includes('forbidden prototype property');
    throw new BadRequestError(
      forbidden
        ? 'The body holds a "__proto__" or "constructor.prototype" key, which is refused: rename or remove it.'
        : `The body is not valid JSON: ${(error as Error).message}.`,
    );
  }
}
