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
 * A write's If-Match, run by the service inside its transaction with the current record's stored
 * ETag, or with undefined when the write inserts a new record; throws to refuse the write.
 */
export type Precondition = (currentEtag: string | undefined) => void;

/**
 * If-Match for a write. `*` matches any existing record; otherwise one of the listed tags must be
 * the record's current one. An insert has no current record, so any If-Match fails (RFC 9110
 * §13.1.1): a client that sent one meant to update a record, and must not get a new one instead.
 */
export function ifMatchCheck(request: FastifyRequest): Precondition | undefined {
  const header = request.headers['if-match'];
  if (!header) return undefined;
  const any = header.trim() === '*';
  // A weak tag never matches under If-Match (RFC 9110 §13.1.1 uses the strong comparison).
  const tags = header
    .split(',')
    .map((t) => t.trim())
    .filter((t) => !t.startsWith('W/'));
  return (currentEtag) => {
    if (currentEtag === undefined) {
      throw new PreconditionFailedError(
        'If-Match names a version of an existing record, but this request has no id: it would insert a new one. Send the id to update, or leave If-Match out to insert.',
      );
    }
    if (!any && !tags.includes(currentEtag)) {
      throw new PreconditionFailedError(
        'The record has changed since you read it (If-Match does not match its ETag). Read it again and retry.',
      );
    }
  };
}
