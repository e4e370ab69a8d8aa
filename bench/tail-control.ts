/**
 * The tail's control: what the machine, the client and the app's arrival-order queue give when
 * every answer costs the same. It answers every request with the bytes of `TAIL_BODY` (an answer
 * of the app's, saved by the tail section) after spinning for `TAIL_WORK_US` µs (the app's CPU per
 * answer), through the app's own queue (inArrivalOrder). It allocates nothing per request, so no
 * garbage collector pauses it: beside the app, its p99 / p50 is the spread that owes nothing to
 * the app's work. Run as a child by workers.ts; reports its port over IPC.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { inArrivalOrder } from '../src/http/arrival-order.js';
import { serve } from './ceiling-kit.js';

const bodyFile = process.env.TAIL_BODY;
const workUs = Number(process.env.TAIL_WORK_US);
if (!bodyFile || !(workUs >= 0)) throw new Error('TAIL_BODY and TAIL_WORK_US are required');
const body = readFileSync(bodyFile);

serve(
  http.createServer(
    inArrivalOrder((_request: http.IncomingMessage, response: http.ServerResponse) => {
      const until = performance.now() + workUs / 1000;
      while (performance.now() < until);
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      response.end(body);
    }),
  ),
);
