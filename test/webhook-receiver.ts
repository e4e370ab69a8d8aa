import { once } from 'node:events';
import http from 'node:http';
import type { TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';

/** One request the receiver got, verified with `standardwebhooks` as a receiver would. */
export interface Received {
  readonly id: string;
  readonly timestamp: number;
  readonly signature: string;
  readonly body: string;
  /** The parsed body, or undefined when no secret given verified it. */
  readonly verified: { type: string; timestamp: string; data: Record<string, unknown> } | undefined;
  /** Which of the secrets verified it (their index), -1 for none. */
  readonly verifiedBy: number;
  /** performance.now() when it arrived. */
  readonly at: number;
}

/**
 * A webhook receiver on 127.0.0.1 (so hooks need WEBHOOK_ALLOW_PRIVATE_TARGETS). Every request is
 * checked against the secrets it is told of; `answer` decides the status of each (200 by default).
 */
export async function webhookReceiver(t: TestContext) {
  const received: Received[] = [];
  let secrets: string[] = [];
  let answer: (request: Received, response: http.ServerResponse) => void = (_request, response) => response.writeHead(200).end();
  const waiters: Array<() => void> = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const headers = {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      };
      let verified: Received['verified'];
      let verifiedBy = -1;
      secrets.forEach((secret, index) => {
        if (verified) return;
        try {
          verified = new Webhook(secret).verify(body, headers) as Received['verified'];
          verifiedBy = index;
        } catch {
          // Not this secret.
        }
      });
      const one: Received = {
        id: headers['webhook-id'],
        timestamp: Number(headers['webhook-timestamp']),
        signature: headers['webhook-signature'],
        body,
        verified,
        verifiedBy,
        at: performance.now(),
      };
      received.push(one);
      answer(one, response);
      for (const wake of waiters.splice(0)) wake();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    /** The secrets a request may be signed with. */
    trust(...list: string[]) {
      secrets = list;
    },
    answerWith(fn: typeof answer) {
      answer = fn;
    },
    /** Resolves once `count` requests have arrived in all; fails after `ms`. */
    async waitFor(count: number, ms = 10_000): Promise<Received[]> {
      // Only turns a hang into a failure; performance.now(), which mock.timers leaves alone, so a
      // test that mocks Date still fails.
      const deadline = performance.now() + ms;
      while (received.length < count) {
        if (performance.now() > deadline) throw new Error(`${received.length} of ${count} webhook requests arrived within ${ms} ms`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          // Not a wait for the requests (an arrival resolves at once) but the moment to look at the deadline again.
          setTimeout(resolve, 100);
        });
      }
      return received;
    },
  };
}
