import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { PreconditionFailedError } from '../errors.js';

/** A strong entity tag: the hash of the bytes it stands for (a body, or a stored record's JSON text). */
export function entityTag(body: string | Buffer): string {
  return `"${createHash('sha1').update(body).digest('base64url')}"`;
}

function listedTags(header: string): string[] {
  return header.split(',').map((t) => t.trim().replace(/^W\//, ''));
}

/** Whether If-None-Match names `tag` (or is `*`): the client's copy is current, answer 304. */
export function noneMatchHas(ifNoneMatch: string | undefined, tag: string): boolean {
  return ifNoneMatch !== undefined && (ifNoneMatch.trim() === '*' || listedTags(ifNoneMatch).includes(tag));
}

/**
 * Every successful GET gets a strong ETag (unless its handler set one) and answers 304 when the
 * client's If-None-Match already names it.
 */
export function installEntityTags(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    if ((request.method !== 'GET' && request.method !== 'HEAD') || reply.statusCode !== 200) return done(null, payload);
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return done(null, payload);
    let tag = reply.getHeader('etag') as string | undefined;
    if (!tag) {
      tag = entityTag(payload);
      reply.header('etag', tag);
    }
    if (noneMatchHas(request.headers['if-none-match'], tag)) {
      reply.code(304);
      return done(null, '');
    }
    done(null, payload);
  });
}

/**
 * If-Match for a write: a check the service runs on the current record's ETag (the one stored
 * with it) inside its transaction. `*` matches any existing record; otherwise one of the listed
 * tags must be the record's current one.
 */
export function ifMatchCheck(request: FastifyRequest): ((currentEtag: string) => void) | undefined {
  const header = request.headers['if-match'];
  if (!header) return undefined;
  if (header.trim() === '*') return () => {};
  // A weak tag never matches under If-Match (RFC 9110 §13.1.1 uses the strong comparison).
  const tags = header
    .split(',')
    .map((t) => t.trim())
    .filter((t) => !t.startsWith('W/'));
  return (currentEtag) => {
    if (!tags.includes(currentEtag)) {
      throw new PreconditionFailedError(
        'The record has changed since you read it (If-Match does not match its ETag). Read it again and retry.',
      );
    }
  };
}
