import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** An X-Request-Id the client sent that is taken as the request's id: a plain token, as a log line can hold it. */
const SENT = /^[\w.-]{1,64}$/;

/**
 * Fastify's genReqId: the client's X-Request-Id when it is a plain token of 1–64 characters (so a
 * caller can follow its own id through our logs), otherwise an id of this process's own. Those are
 * a prefix of 96 random bits drawn when the process starts and a counter: unique across processes
 * and nodes without any coordination, as a random UUID per request was, at a fraction of the cost
 * (a UUID and its checks were about a tenth of a GET by id under load). Request ids
 * are for following a request through the logs; nothing trusts or authorizes by them.
 */
export function requestIds(prefix = randomBytes(12).toString('base64url')): (request: IncomingMessage) => string {
  let count = 0;
  return (request) => {
    const sent = request.headers['x-request-id'];
    if (typeof sent === 'string' && SENT.test(sent)) return sent;
    count += 1;
    return `${prefix}-${count.toString(36)}`;
  };
}
