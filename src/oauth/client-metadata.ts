import { lookup } from 'node:dns/promises';
import { request } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { Readable } from 'node:stream';
import type { Configuration } from 'oidc-provider';
import type { Config } from '../config.js';
import { type ApplicationType, clientNameProblem, redirectUriProblem } from './client.service.js';

/**
 * Loopback, private, link-local, shared, reserved and multicast ranges: never fetched from.
 * (BlockList matches an IPv4 address against ::ffff:0:0/96 too, so IPv4-mapped IPv6 is handled
 * by unwrapping the IPv4 address instead.)
 */
const NOT_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const)
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 127],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv6');

/** Whether every address the host name resolves to is public. IPv4-mapped IPv6 counts as its IPv4 address. */
export async function resolvesToPublic(hostname: string): Promise<boolean> {
  const host = hostname.replace(/^\[|\]$/g, '');
  try {
    const addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookup(host, { all: true, verbatim: true });
    return (
      addresses.length > 0 &&
      addresses.every(({ address, family }) => {
        const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
        if (mapped) return !NOT_PUBLIC.check(mapped, 'ipv4');
        return !NOT_PUBLIC.check(address, family === 6 ? 'ipv6' : 'ipv4');
      })
    );
  } catch {
    return false;
  }
}

/**
 * Tests only: a fetch that trusts the test's certificate authority and may reach loopback.
 * oidc-provider's own limits still apply around it (its 2.5 s abort signal, the body size limit).
 */
function fetchTrusting(ca: string): NonNullable<Configuration['fetch']> {
  return (url, options = {}) =>
    new Promise((resolve, reject) => {
      const headers = Object.fromEntries(new Headers(options.headers as ConstructorParameters<typeof Headers>[0]).entries());
      const outgoing = request(
        String(url),
        { method: options.method ?? 'GET', headers, ca, signal: options.signal ?? undefined },
        (incoming) => {
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(incoming.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
          resolve(
            new Response(Readable.toWeb(incoming) as ReadableStream, { status: incoming.statusCode ?? 500, headers: responseHeaders }),
          );
        },
      );
      outgoing.on('error', reject);
      outgoing.end();
    });
}

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client whose
 * client_id is an https URL is described by the JSON document at that URL. oidc-provider fetches
 * it (2.5 s, 5 KiB, no redirects, special-use addresses refused when connecting), checks that the
 * document's client_id is its URL and that it has no secret, and builds the client from it; here
 * the host must also resolve to public addresses only, and its redirect URIs and name must pass
 * the rules every client follows. Documents are cached per process for 30 s to 5 min (their Cache-Control
 * within that range), so a changed document reaches every node within 5 minutes.
 */
export function clientMetadataDocuments(config: Config): Pick<Configuration, 'fetch'> & {
  feature: NonNullable<Configuration['features']>['clientIdMetadataDocument'];
} {
  const trusted = config.oauth.clientMetadataFetch;
  return {
    feature: {
      enabled: config.oauth.clientMetadataDocuments,
      ack: 'draft-02',
      allowFetch: async (_ctx, clientId) => Boolean(trusted) || resolvesToPublic(new URL(clientId).hostname),
      allowClient: async (_ctx, client) => {
        const type: ApplicationType = client.applicationType === 'native' ? 'native' : 'web';
        const uris = client.redirectUris ?? [];
        const name = typeof client.clientName === 'string' ? client.clientName.trim() : '';
        if (name && clientNameProblem(name)) return false;
        return uris.length > 0 && uris.every((uri) => !redirectUriProblem(uri, type));
      },
      cacheDuration: { min: 30, max: 300 },
    },
    ...(trusted ? { fetch: fetchTrusting(trusted.ca) } : {}),
  };
}

/** Whether a client_id names a metadata document (generated ids never start with https://). */
export function isMetadataDocumentClientId(clientId: string): boolean {
  return clientId.startsWith('https://');
}
