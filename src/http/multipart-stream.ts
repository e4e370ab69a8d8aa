/**
 * Guards on the parts of a multipart body as @fastify/multipart hands them over: whatever the
 * parser fails with is the body's fault (a 400, not a 500), and a parser that stops reading the
 * body is noticed rather than waited on forever.
 */
import type { Readable } from 'node:stream';
import { AppError, BadRequestError } from '../errors.js';

/** What to do about a multipart body the parser cannot read: the usual cause is a boundary written by hand. */
const MALFORMED_FORM_ADVICE =
  'Nothing was stored: let the client build the form (curl -F, or FormData), so that the body and the boundary its Content-Type names agree.';

/**
 * Busboy reports a malformed body (no boundary, a part cut short, no closing boundary, bytes that
 * are no form) as a plain Error without a status, which the problem handler would answer as a 500.
 * Only the parser feeds these iterables, so whatever fails in them is the body's fault: a 400.
 * Errors that carry their own status (the plugin's limits, a premature close) keep it, except the
 * plugin's 406 for a field sent as application/json that does not parse: the body is at fault, a 400.
 */
export async function* parsed<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* source;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'FST_INVALID_JSON_FIELD_ERROR') {
      throw new BadRequestError(
        'A form field sent as application/json is not valid JSON: correct it, or send the field as plain text (without that Content-Type), and the answer will say where the JSON goes wrong.',
      );
    }
    if (error instanceof AppError || typeof (error as { statusCode?: unknown }).statusCode === 'number') throw error;
    throw new BadRequestError(`The multipart body is malformed: ${(error as Error).message}. ${MALFORMED_FORM_ADVICE}`);
  }
}

/**
 * How long the parser may hold the request body without reading it, while no part is being read:
 * then it will not go on. @fastify/busboy 3.2.6 never finishes a form after skipping a part over
 * 16 KiB whose Content-Disposition is not form-data, and stops reading the body instead.
 */
export const FORM_SETTLE_MS = 3000;
const FORM_POLL_MS = 100;

/**
 * The parts of `source`, refused as a malformed body (400) when, while the next part is awaited,
 * the request body stays read to its end or paused by the parser (pipe backpressure) for
 * FORM_SETTLE_MS. Reading a part's file is not counted (nothing is awaited from the parser then),
 * nor a slow client: its body is flowing, only waiting for bytes.
 */
export async function* settled<T>(raw: Readable, source: AsyncIterable<T>): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]();
  let stuck = false;
  try {
    while (true) {
      let poll: NodeJS.Timeout | undefined;
      const stall = new Promise<never>((_, reject) => {
        let idleSince = 0;
        poll = setInterval(() => {
          if (!raw.readableEnded && raw.readableFlowing !== false) {
            idleSince = 0;
            return;
          }
          idleSince ||= Date.now();
          if (Date.now() - idleSince < FORM_SETTLE_MS) return;
          stuck = true;
          reject(
            new BadRequestError(`The multipart body is malformed: the parser stopped before the form ended. ${MALFORMED_FORM_ADVICE}`),
          );
        }, FORM_POLL_MS);
      });
      let step: IteratorResult<T>;
      try {
        step = await Promise.race([iterator.next(), stall]);
      } finally {
        clearInterval(poll);
      }
      if (step.done) return;
      yield step.value;
    }
  } finally {
    // A parser that never finishes would never return either: it is left to the collector.
    if (!stuck) await iterator.return?.();
  }
}
