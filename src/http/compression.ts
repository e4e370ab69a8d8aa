import { constants } from 'node:zlib';
import fastifyCompress from '@fastify/compress';
import type { FastifyInstance } from 'fastify';

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
  // The plugin adds Vary only to the answers it compresses. An answer sent as it is, because this
  // client did not ask, would differ for one that does: a cache must key it on Accept-Encoding too.
  // Set here, before the ETag hook can turn the answer into a 304, which then carries it as well.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (needsVary(reply, payload)) addVary(reply, 'accept-encoding');
    done(null, payload);
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

/** Adds `field` to Vary unless it is there already (in any case); the plugin looks for it in lower case. */
function addVary(reply: { getHeader(name: string): unknown; header(name: string, value: string): unknown }, field: string): void {
  const current = reply.getHeader('vary');
  const listed =
    current === undefined
      ? []
      : String(current)
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean);
  if (listed.some((v) => v === '*' || v.toLowerCase() === field)) return;
  reply.header('vary', [...listed, field].join(', '));
}
