import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * The idle limit (HTTP_IDLE_TIMEOUT_SECONDS, the server's socket timeout) closes a connection only
 * while it waits for its client: before a request has begun, between requests, while the request
 * is still arriving and the server has read all of it that came, or while the answer waits for the
 * client to read it. A request that has arrived whole and is still being answered (a long-poll up
 * to its longest `wait`, an upload queued for image work) is the server's to finish, however long
 * the connection is silent meanwhile: left to Node, the socket's timer destroyed it mid-answer
 * whenever the answer took longer than the limit. The server's own time limits stay where they are
 * (the long-poll's `wait`, the headers and request limits, shutdown's grace).
 *
 * Installed as the server's 'timeout' listener: Node then destroys no socket itself on its timer,
 * and this decides. One listener for the server, so requests pay nothing for it.
 */
export function closeIdleConnections(server: Server): void {
  server.on('timeout', (socket: Socket) => {
    if (waitsForClient(socket)) socket.destroy();
  });
}

function waitsForClient(socket: Socket): boolean {
  // The answer the connection is on, as Node's own timeout handling finds it: none between requests.
  const answer = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (!answer) return true;
  // Bytes of the answer that the client has not taken.
  if (socket.writableLength > 0) return true;
  // The request is still arriving and the handler has read what came: the client is to send more.
  // (What it sent and the handler has not read yet leaves the next step to the server.)
  return !answer.req.complete && answer.req.readableLength === 0;
}
