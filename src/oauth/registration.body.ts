import { IncomingMessage } from 'node:http';
import { PayloadTooLargeError } from '../errors.js';

/** A registration is a few hundred bytes of JSON; more is not a client's metadata. */
const MAX_REGISTRATION_BYTES = 64 * 1024;

async function readAll(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > MAX_REGISTRATION_BYTES)
      throw new PayloadTooLargeError(`A client registration may have at most ${MAX_REGISTRATION_BYTES} bytes.`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * An RFC 7591 registration request without its `scope`. MCP clients register the scopes they
 * found in the resource metadata; oidc-provider checks a client's `scope` against its own
 * (OpenID) scope list, which is empty here because every scope belongs to a resource, and would
 * refuse them all. RFC 7591 §2 lets the server replace requested metadata: the scopes are asked
 * for, and approved by the owner, at each authorization instead. Any other body is passed on
 * unchanged for the provider to judge.
 */
export async function withoutRequestedScope(raw: IncomingMessage): Promise<IncomingMessage> {
  let body = await readAll(raw);
  try {
    const metadata: unknown = JSON.parse(body.toString('utf8'));
    if (metadata && typeof metadata === 'object' && !Array.isArray(metadata) && 'scope' in metadata) {
      const { scope: _scope, ...rest } = metadata as Record<string, unknown>;
      body = Buffer.from(JSON.stringify(rest));
    }
  } catch {
    // Not JSON: the provider answers invalid_request itself.
  }
  // The same connection and headers, with the body as the provider should read it.
  const copy = new IncomingMessage(raw.socket);
  copy.method = raw.method;
  copy.url = raw.url;
  copy.httpVersion = raw.httpVersion;
  copy.headers = { ...raw.headers, 'content-length': String(body.length) };
  delete copy.headers['transfer-encoding'];
  copy.push(body);
  copy.push(null);
  // Without it, Node destroys the socket when this message is done, taking it for a cut-off request.
  copy.complete = true;
  return copy;
}
