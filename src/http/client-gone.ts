import type { FastifyReply } from 'fastify';

/**
 * Aborted when the connection closes before the answer was sent: the client has gone, so work
 * queued for it (image processing) is dropped rather than done for nobody.
 */
export function clientGone(reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  return gone.signal;
}
