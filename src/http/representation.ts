/**
 * What an answer is as a representation (RFC 9110): its entity tag and the conditional requests
 * that use it (If-None-Match, If-Match), and its content coding (compression, Vary). One onSend
 * hook sets the headers every answer carries, in the order they depend on each other.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:zlib';
import fastifyCompress from '@fastify/compress';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { PreconditionFailedError } from '../errors.js';

/** Answers smaller than this go as they are: the encoding's framing and CPU would cost more than the bytes saved. */
export const COMPRESSION_THRESHOLD = 1024;

/**
 * Cheap settings: nearly the bytes the defaults save, at a small part of their CPU (brotli's
 * default quality takes hundreds of times as long on a list); bench/README.md, Compression, has
 * the measurements.
 */
const BROTLI_QUALITY = 4;
const GZIP_LEVEL = 4;

/**
 * Every body the service builds in memory is compressed in one synchronous call, lists of 999
 * included. The plugin's default streams bodies over 8 KB through zlib's thread pool instead,
 * which on a small machine cost more CPU per answer and several times the latency
 * (bench/README.md, Compression). A body sent as a stream is still compressed as a stream.
 */
const SYNC_LIMIT = 8 * 1024 * 1024;

/**
 * What the service sends as text: JSON and problem+json, HTML, Markdown references, the /try
 * script. Images (JPEG, PNG, GIF, WebP, AVIF) are compressed already and never match; neither does
 * an event stream, which must reach the client as it is written.
 */
const TEXTUAL = /^text\/(?!event-stream)|[+/]json(?:;|$)|[+/]xml(?:;|$)|\/javascript(?:;|$)/;

function compressibleType(contentType: string | undefined): boolean {
  return TEXTUAL.test(contentType ?? 'application/json');
}

/**
 * Compressed answers when the client's Accept-Encoding asks for them (docs/api.md, Compression):
 * br or gzip, the client's preference and q-values first and br on a tie; identity when the header
 * is absent, says identity, or names nothing else we speak. The answer's ETag is the one of its
 * uncompressed bytes, whatever the encoding: the ETag hook runs before this plugin's, which every
 * route gets as its last onSend hook. Registered before any route, since it attaches to each route
 * as it is added. Request bodies are not decompressed: a Content-Encoding on a request is not
 * something the API accepts.
 */
export async function installCompression(app: FastifyInstance): Promise<void> {
  await app.register(fastifyCompress, {
    globalDecompression: false,
    encodings: ['br', 'gzip'],
    threshold: COMPRESSION_THRESHOLD,
    customTypes: compressibleType,
    brotliOptions: {
      params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT },
    },
    zlibOptions: { level: GZIP_LEVEL },
    syncThreshold: SYNC_LIMIT,
  });
}

/** Whether an answer is one the plugin would compress for a client that asked: textual, and a stream or 1 KB or more. */
function needsVary(reply: { getHeader(name: string): unknown }, payload: unknown): boolean {
  if (!compressibleType(reply.getHeader('content-type') as string | undefined)) return false;
  // A stream's length is unknown in advance: the plugin compresses any stream of a textual type.
  if (isStream(payload)) return true;
  // A string has at least as many UTF-8 bytes as UTF-16 units: a long list is not measured again.
  const size =
    typeof payload === 'string'
      ? payload.length >= COMPRESSION_THRESHOLD
        ? payload.length
        : Buffer.byteLength(payload)
      : Buffer.isBuffer(payload)
        ? payload.length
        : undefined;
  return size !== undefined && size >= COMPRESSION_THRESHOLD;
}

function isStream(payload: unknown): boolean {
  return typeof (payload as { pipe?: unknown } | null)?.pipe === 'function';
}

/**
 * Adds `field` (lower case) to Vary unless it is there already (in any case), keeping the fields
 * set before; the compression plugin looks for accept-encoding in lower case. Runs on nearly every
 * answer, so the header is scanned in place rather than split into arrays.
 */
export function addVary(reply: { getHeader(name: string): unknown; header(name: string, value: string): unknown }, field: string): void {
  const current = reply.getHeader('vary');
  if (current === undefined) {
    reply.header('vary', field);
    return;
  }
  const text = String(current);
  let kept = '';
  for (const part of text.split(',')) {
    const name = part.trim();
    if (name === '*' || name.toLowerCase() === field) return;
    if (name) kept = kept ? `${kept}, ${name}` : name;
  }
  reply.header('vary', kept ? `${kept}, ${field}` : field);
}

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
 * A write's preconditions (If-Match, If-None-Match), run by the service inside its transaction with
 * the current record's stored ETag, or with undefined when the write inserts a new record; throws
 * to refuse the write.
 */
export type Precondition = (currentEtag: string | undefined) => void;

/**
 * The preconditions of a write, in RFC 9110 §13.2.2's order; a 412 when one is false, and nothing
 * is written. If-Match: `*` matches any existing record, otherwise one of the listed tags must be
 * the record's current one, compared strongly (a weak tag never matches). An insert has no current
 * record, so any If-Match fails (§13.1.1): a client that sent one meant to update a record, and
 * must not get a new one instead. If-None-Match: `*` fails on an existing record, a list of tags
 * when it names the current one (compared weakly, §13.1.2); an origin server must evaluate it on
 * a write as on a read, where it answers 304 instead.
 */
export function writePreconditions(request: FastifyRequest): Precondition | undefined {
  const ifMatch = request.headers['if-match'];
  const ifNoneMatch = request.headers['if-none-match'];
  if (!ifMatch && !ifNoneMatch) return undefined;
  const any = ifMatch?.trim() === '*';
  const tags = (ifMatch ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => !t.startsWith('W/'));
  return (currentEtag) => {
    if (ifMatch) {
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
    }
    if (ifNoneMatch && currentEtag !== undefined && noneMatchHas(ifNoneMatch, currentEtag)) {
      throw new PreconditionFailedError(
        ifNoneMatch.trim() === '*'
          ? 'The record exists, and If-None-Match: * asks to write only where there is none: nothing was written. To change the existing record, send the request without If-None-Match.'
          : 'The record is at a version If-None-Match names, so nothing was written. To write it whatever its version, send the request without If-None-Match.',
      );
    }
  };
}

/**
 * The headers every answer carries, set in one onSend hook, in this order:
 * - X-Request-Id, its request's id, so a caller can quote it;
 * - Connection: close once the app is closing (see below);
 * - Vary: Accept-Encoding on an answer the plugin would compress for a client that asked: the
 *   plugin adds Vary only to the answers it compresses, and one sent as it is, because this client
 *   did not ask, would differ for one that does, so a cache must key it on Accept-Encoding too;
 * - on a successful GET, a strong ETag (unless its handler set one), and a 304 when the client's
 *   If-None-Match already names it. The 304 keeps the ETag, Vary and Cache-Control set before it.
 *
 * The compression plugin's own hook runs after this one (it is every route's last), so the ETag is
 * the one of the uncompressed bytes, whatever the encoding. Callback style: an async hook costs a
 * promise and a microtask on every request.
 */
export function installAnswerHeaders(app: FastifyInstance): void {
  // Answers sent once the app is closing end their connection. Node's close waits for every
  // connection, and a kept-alive one whose request was in flight when the close began would hold
  // it (and the shutdown) until the client hung up or the keep-alive timeout passed.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    if (closing) reply.header('connection', 'close');
    if (needsVary(reply, payload)) addVary(reply, 'accept-encoding');
    if ((request.method !== 'GET' && request.method !== 'HEAD') || reply.statusCode !== 200) return done(null, payload);
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return done(null, payload);
    let tag = reply.getHeader('etag') as string | undefined;
    if (!tag) {
      tag = entityTag(payload);
      reply.header('etag', tag);
    }
    if (noneMatchHas(request.headers['if-none-match'], tag)) {
      // A 304 has no body. Its Content-Type would describe one (RFC 9110 §15.4.5), and a
      // Content-Length must be the 200's or absent (§8.6): a GET's null payload gets none, and a
      // HEAD's payload goes on to Fastify's HEAD handler, which states its length and sends nothing.
      reply.code(304).removeHeader('content-type');
      return done(null, request.method === 'HEAD' ? payload : null);
    }
    done(null, payload);
  });
}
