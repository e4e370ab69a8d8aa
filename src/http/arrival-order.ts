import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';

/**
 * How long one turn of the event loop answers queued requests before the loop reads its sockets
 * again. It bounds how long a request that has arrived can go unseen, so it is kept to a fraction
 * of the slowest common answer (a list of 200); cheap requests still share a turn by the dozen,
 * which keeps the loop's per-turn cost off each of them.
 */
const SLICE_MS = 1;

interface Options {
  sliceMs?: number;
  now?: () => number;
  /** Runs a callback on the loop's next check phase: setImmediate, or a test's turn. */
  defer?: (callback: () => void) => void;
}

/**
 * Requests are answered in the order the server read them, a slice of time per loop turn.
 *
 * Left to Node, each request is answered inside the read callback of its socket, in the order the
 * poll reports the sockets, and the poll (level-triggered epoll) reports the sockets it reported
 * last time ahead of one that has become readable since. A request that just missed a poll then
 * waits for the whole batch in progress and after it for every request of the next batch, most of
 * which arrived after it, and more when it misses again: a tail of many service times, from
 * requests overtaken by dozens of later ones (bench/README.md, the tail). Here a read request joins the
 * back of one queue, and a turn answers from its front until the slice is used; the loop then
 * polls, and what arrived meanwhile joins behind the requests that were already waiting.
 */
export function inArrivalOrder<Args extends unknown[]>(answer: (...args: Args) => void, options: Options = {}): (...args: Args) => void {
  const { sliceMs = SLICE_MS, now = () => performance.now(), defer = setImmediate } = options;
  const waiting: Args[] = [];
  let head = 0;
  // When this turn began answering; -1 between turns. A turn's first answer sets it and defers
  // its reset, which then runs at the start of the next turn, ahead of that turn's answers.
  let turnStart = -1;
  const endTurn = () => {
    turnStart = -1;
  };
  // One call per waiting request: it answers the one at the front, or, once the turn has used
  // its slice, waits for the next turn.
  const next = () => {
    if (head === waiting.length) return;
    const time = now();
    if (turnStart < 0) {
      turnStart = time;
      defer(endTurn);
    } else if (time - turnStart >= sliceMs) {
      defer(next);
      return;
    }
    const args = waiting[head]!;
    waiting[head++] = undefined as never;
    if (head === waiting.length) {
      waiting.length = 0;
      head = 0;
    }
    answer(...args);
  };
  return (...args: Args) => {
    waiting.push(args);
    defer(next);
  };
}

/** The servers arrivalOrderServer made: the app's test reads it to see that the app's server is one. */
export const arrivalOrderServers = new WeakSet<Server>();

/**
 * Fastify's `serverFactory`: the HTTP/1.1 server Fastify would make, with its timeouts, whose
 * requests are answered in arrival order.
 */
export function arrivalOrderServer(
  handler: (request: IncomingMessage, response: ServerResponse) => void,
  options: { http?: ServerOptions; keepAliveTimeout?: number; requestTimeout?: number; connectionTimeout?: number },
): Server {
  const server = createServer(options.http ?? {}, inArrivalOrder(handler));
  if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
  if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
  if (options.connectionTimeout !== undefined) server.setTimeout(options.connectionTimeout);
  arrivalOrderServers.add(server);
  return server;
}
