import { IncomingMessage } from 'node:http';
import { PayloadTooLargeError } from '../../errors.js';

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
 * The client metadata a registration keeps (RFC 7591 §2): what a public client of the code flow
 * with PKCE is described by. Everything else is dropped before oidc-provider sees it, as RFC 7591
 * §2 lets a server do, and the answer shows what was kept:
 * - `scope`: MCP clients register the scopes they found in the resource metadata, and
 *   oidc-provider would check them against its own (OpenID) scope list, empty here because every
 *   scope belongs to a resource; they are asked for, and approved, at each authorization instead;
 * - OpenID Connect's metadata, for features this server does not have; among them
 *   `sector_identifier_uri`, which oidc-provider fetches while it validates the registration: an
 *   anonymous caller could have made the server connect to any address, internal ones included.
 */
export const REGISTERED_METADATA: ReadonlySet<string> = new Set([
  'redirect_uris',
  'client_name',
  'client_uri',
  'logo_uri',
  'tos_uri',
  'policy_uri',
  'contacts',
  'software_id',
  'software_version',
  'token_endpoint_auth_method',
  'grant_types',
  'response_types',
  'application_type',
]);

/** An RFC 7591 registration request with only the metadata this server keeps (REGISTERED_METADATA). */
export async function registrationRequest(raw: IncomingMessage): Promise<IncomingMessage> {
  let body = await readAll(raw);
  try {
    const metadata: unknown = JSON.parse(body.toString('utf8'));
    if (metadata && typeof metadata === 'object' && !Array.isArray(metadata)) {
      body = Buffer.from(JSON.stringify(Object.fromEntries(Object.entries(metadata).filter(([key]) => REGISTERED_METADATA.has(key)))));
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
