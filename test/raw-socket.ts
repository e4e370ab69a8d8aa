import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import type { TestContext } from 'node:test';

/**
 * A plain TCP connection to a server under test, for what an HTTP client cannot do: stay silent,
 * send a request a byte at a time, leave an answer unread. Everything received is kept as text,
 * and `closed` settles when the server (or the test) closes it.
 */
export function rawSocket(
  t: TestContext,
  port: number,
  host = '127.0.0.1',
): { socket: Socket; received: () => string; closed: Promise<unknown> } {
  const socket = connect(port, host);
  t.after(() => socket.destroy());
  let received = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => {});
  return { socket, received: () => received, closed: once(socket, 'close') };
}
