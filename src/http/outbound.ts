import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';

/**
 * Every request this server makes to an address someone else chose (a client's metadata
 * document, a webhook) goes through one guard, so that nobody can make the server reach what
 * only it can reach: its loopback, its private network, the cloud's metadata service.
 *
 * - Only global unicast addresses are reached (isPublicAddress).
 * - The host is resolved once; the request is refused if any answer is not public, and the socket
 *   connects to the addresses that were checked. Resolving again to connect would let DNS answer
 *   differently the second time (rebinding).
 * - https only; a redirect is not followed (it would name a host nobody checked): a 3xx fails.
 *   A caller may also allow private targets (privateTargets: webhooks in development), and plain
 *   http to those only: what travels in the clear then never leaves the private network.
 * - The answer is read whole, up to a size limit, within a connect and a total time limit.
 */

/**
 * IANA's IPv4 Special-Purpose Address Registry, with multicast and the reserved 240/4 (which
 * holds the limited broadcast 255.255.255.255). Some of these are marked globally reachable
 * (AS112, AMT anycast), but none holds a web server a client would publish a document on.
 */
const SPECIAL_IPV4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, where cloud metadata services answer
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.31.196.0', 24], // AS112
  ['192.52.193.0', 24], // AMT
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['192.175.48.0', 24], // AS112 direct delegation
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the limited broadcast
];

/**
 * The parts of global unicast (2000::/3) that IANA's IPv6 Special-Purpose Address Registry sets
 * apart. Everything outside 2000::/3 is refused before this list is asked: ::, ::1, IPv4-compatible
 * ::/96, IPv4-translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, discard 100::/64,
 * 5f00::/16, unique local fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8.
 */
const SPECIAL_IPV6: ReadonlyArray<readonly [string, number]> = [
  ['2001::', 23], // IETF protocol assignments, Teredo (2001::/32) among them
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: the embedded IPv4 address would be reached through a relay
  ['2620:4f:8000::', 48], // AS112 direct delegation
  ['3fff::', 20], // documentation
];

const NOT_PUBLIC_V4 = new BlockList();
for (const [net, prefix] of SPECIAL_IPV4) NOT_PUBLIC_V4.addSubnet(net, prefix, 'ipv4');
const NOT_PUBLIC_V6 = new BlockList();
for (const [net, prefix] of SPECIAL_IPV6) NOT_PUBLIC_V6.addSubnet(net, prefix, 'ipv6');

/**
 * What `privateTargets` adds: loopback, the IPv4 private ranges and IPv6 unique-local, where a
 * developer's receiver runs. Link-local (the cloud metadata service), multicast and the other
 * special ranges stay refused even then.
 */
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['127.0.0.0', 8],
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv4');
}
PRIVATE.addAddress('::1', 'ipv6');
PRIVATE.addSubnet('fc00::', 7, 'ipv6');

/** A private target's address (PRIVATE), an IPv4-mapped one judged as its IPv4 address. */
function isPrivateAddress(address: string): boolean {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(text);
  if (family === 4) return PRIVATE.check(text, 'ipv4');
  if (family !== 6 || text.includes('%')) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(text);
  return mapped ? PRIVATE.check(mapped[1] as string, 'ipv4') : PRIVATE.check(text, 'ipv6');
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** The eight 16-bit groups of a valid IPv6 address (isIP said 6), a trailing dotted quad included. */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * Whether an address is global unicast, outside every special-use range: the only addresses the
 * server connects to for someone else. Any textual form is judged by its value (compressed,
 * with an embedded dotted quad, in brackets); an IPv4-mapped address (::ffff:a.b.c.d) is judged
 * as the IPv4 address a socket to it reaches. Anything that is not an IP address is refused, and
 * so is an address with a zone (fe80::1%eth0), which only link-local addresses need.
 */
export function isPublicAddress(address: string): boolean {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(text);
  if (family === 4) return !NOT_PUBLIC_V4.check(text, 'ipv4');
  if (family !== 6 || text.includes('%')) return false;
  const groups = ipv6Groups(text);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [high = 0, low = 0] = groups.slice(6);
    return isPublicAddress(`${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`);
  }
  // Allow-list first: global unicast is 2000::/3; BlockList then sees the canonical form only.
  if (((groups[0] ?? 0) & 0xe000) !== 0x2000) return false;
  return !NOT_PUBLIC_V6.check(groups.map((g) => g.toString(16)).join(':'), 'ipv6');
}

/** Any request the guard refuses or that fails: its message says why, for logs and error details. */
export class OutboundError extends Error {
  override name = 'OutboundError';
  /** The refusal is of http or a private address, which the guard's `privateTargets` would allow: a setting can change it. */
  readonly privateTargetsWouldAllow: boolean;

  constructor(message: string, options: ErrorOptions & { privateTargetsWouldAllow?: boolean } = {}) {
    super(message, options);
    this.privateTargetsWouldAllow = options.privateTargetsWouldAllow ?? false;
  }
}

/** Every address a host name resolves to. */
type Resolve = (hostname: string) => Promise<readonly LookupAddress[]>;

const systemResolve: Resolve = (hostname) => dnsLookup(hostname, { all: true, order: 'verbatim' });

export interface OutboundOptions {
  /** The largest answer body read, in bytes; a larger one fails, unless `cutPastLimit`. */
  readonly maxBytes: number;
  /**
   * For a caller that needs only the status and headers (a webhook delivery): a body larger than
   * maxBytes is read up to the limit and the connection then closed, and the answer resolves with
   * its status and headers and the body cut there. The read stays bounded either way.
   */
  readonly cutPastLimit?: boolean;
  /** Until the TLS handshake is done (on plain http, until the TCP connection is). */
  readonly connectTimeoutMs?: number;
  /** Until the whole answer is read. */
  readonly timeoutMs?: number;
  /** The resolver: the system's (getaddrinfo, as every other connection of the process) unless given. */
  readonly resolve?: Resolve;
  /**
   * Private targets (isPrivateAddress) are reached too, and plain http is allowed to a host whose
   * every address is private; a public host still needs https. Development and tests only
   * (WEBHOOK_ALLOW_PRIVATE_TARGETS).
   */
  readonly privateTargets?: boolean;
  /**
   * Tests only: set by test code, never from configuration the environment can reach. A
   * certificate authority to trust; loopback counted as public (tests' servers listen there);
   * and where the socket connects in place of a checked address, to stand a loopback server in
   * for a public one.
   */
  readonly testHooks?: {
    readonly ca?: string;
    readonly loopback?: boolean;
    readonly connectTo?: (checked: LookupAddress) => LookupAddress;
  };
}

interface OutboundInit {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Uint8Array;
  /** The caller's own limit, besides the guard's. */
  readonly signal?: AbortSignal | null;
}

export type OutboundFetch = (url: string | URL, init?: OutboundInit) => Promise<Response>;

/** A fetch for requests to addresses that others choose. The answer's body is already read, within the size limit. */
export function outboundFetch(options: OutboundOptions): OutboundFetch {
  return outboundGuard(options).fetch;
}

export interface OutboundGuard {
  /** The fetch, which checks the target again on every request (DNS may answer differently by then). */
  readonly fetch: OutboundFetch;
  /** Refuses a target the fetch would refuse, without connecting: for a URL stored to be fetched later. */
  readonly check: (url: string | URL) => Promise<void>;
}

/** The guard's fetch, and its check of a target alone. */
export function outboundGuard(options: OutboundOptions): OutboundGuard {
  const {
    maxBytes,
    cutPastLimit = false,
    connectTimeoutMs = 2500,
    timeoutMs = 5000,
    resolve = systemResolve,
    testHooks,
    privateTargets = false,
  } = options;
  const allowed = (address: string) =>
    isPublicAddress(address) ||
    (privateTargets && isPrivateAddress(address)) ||
    (testHooks?.loopback === true && LOOPBACK.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4'));

  /** The host's addresses, resolved once; refused unless every one of them is allowed. */
  async function checkedAddresses(host: string): Promise<LookupAddress[]> {
    const family = isIP(host);
    let answers: readonly LookupAddress[];
    try {
      answers = family ? [{ address: host, family }] : await resolve(host);
    } catch (cause) {
      throw new OutboundError(`${host} could not be resolved`, { cause });
    }
    if (answers.length === 0) throw new OutboundError(`${host} has no address`);
    const refused = answers.find(({ address }) => !allowed(address));
    if (refused) {
      throw new OutboundError(`${host} resolves to ${refused.address}, which is not a public address`, {
        privateTargetsWouldAllow: !privateTargets && isPrivateAddress(refused.address),
      });
    }
    return [...answers];
  }

  /** Whether every address of `host` is private: where privateTargets would allow plain http. */
  async function resolvesPrivately(hostname: string): Promise<boolean> {
    const host = hostname.replace(/^\[|\]$/g, '');
    try {
      const answers = isIP(host) ? [{ address: host }] : await resolve(host);
      return answers.length > 0 && answers.every(({ address }) => isPrivateAddress(address));
    } catch {
      return false;
    }
  }

  /** The target's URL and the addresses to connect to, or the rule it breaks. */
  async function checkedTarget(target: string | URL): Promise<{ url: URL; host: string; addresses: LookupAddress[] }> {
    const url = new URL(target);
    const plain = url.protocol === 'http:' && privateTargets;
    if (url.protocol !== 'https:' && !plain) {
      throw new OutboundError(`${url.protocol} is not fetched: only https${privateTargets ? ', or http to a private address' : ''}`, {
        privateTargetsWouldAllow: !privateTargets && url.protocol === 'http:' && (await resolvesPrivately(url.hostname)),
      });
    }
    if (url.username || url.password) throw new OutboundError('a URL with credentials in it is not fetched');
    // WHATWG URL has already written an IP literal in its canonical form (2130706433 is 127.0.0.1).
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const addresses = await checkedAddresses(host);
    // Checked on the addresses as resolved (before testHooks.connectTo): what the name says it is.
    if (plain && addresses.some(({ address }) => !isPrivateAddress(address))) {
      throw new OutboundError(`${host} has a public address: only https is fetched from it`);
    }
    return { url, host, addresses: addresses.map((answer) => testHooks?.connectTo?.(answer) ?? answer) };
  }

  const fetch: OutboundFetch = async (target, init = {}) => {
    const { url, host, addresses } = await checkedTarget(target);
    const request = url.protocol === 'http:' ? httpRequest : httpsRequest;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init.signal ? AbortSignal.any([timeout, init.signal]) : timeout;

    return new Promise<Response>((resolve, reject) => {
      const fail = (error: Error) => {
        outgoing.destroy();
        reject(error);
      };
      // The socket's lookup hands out the addresses checked above: it never asks DNS again.
      const lookup = (_hostname: string, lookupOptions: LookupOptions, callback: (...args: unknown[]) => void) => {
        const wanted = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : 0;
        const usable = addresses.filter((a) => !wanted || a.family === wanted);
        if (usable.length === 0) return callback(new OutboundError(`${host} has no IPv${wanted} address`));
        if (lookupOptions.all) return callback(null, usable);
        const [first] = usable as [LookupAddress];
        callback(null, first.address, first.family);
      };
      const outgoing = request({
        host,
        port: url.port || (url.protocol === 'http:' ? 80 : 443),
        path: `${url.pathname}${url.search}`,
        method: init.method ?? 'GET',
        headers: init.headers,
        // A connection of its own: a pooled socket would skip the lookup, and a pool is kept per host name.
        agent: false,
        lookup: lookup as never,
        ...(testHooks?.ca ? { ca: testHooks.ca } : {}),
      });
      const connectTimer = setTimeout(
        () => fail(new OutboundError(`no connection to ${host} within ${connectTimeoutMs} ms`)),
        connectTimeoutMs,
      );
      // Connected means the TLS handshake is done; on plain http, the TCP connection.
      const connected = url.protocol === 'http:' ? 'connect' : 'secureConnect';
      outgoing.once('socket', (socket) => socket.once(connected, () => clearTimeout(connectTimer)));
      const onAbort = () =>
        fail(timeout.aborted ? new OutboundError(`no complete answer from ${host} within ${timeoutMs} ms`) : new OutboundError('aborted'));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      outgoing.once('close', () => {
        clearTimeout(connectTimer);
        signal.removeEventListener('abort', onAbort);
      });
      // on, not once: a request destroyed after a failure may report a second error.
      outgoing.on('error', (error) => reject(error instanceof OutboundError ? error : new OutboundError(error.message, { cause: error })));
      outgoing.once('response', (incoming) => {
        readAnswer(incoming, url, maxBytes, cutPastLimit).then(resolve, fail);
      });
      outgoing.end(init.body);
    });
  };

  return {
    fetch,
    check: async (url) => {
      await checkedTarget(url);
    },
  };
}

/** Statuses whose Response has no body. */
const NULL_BODY = new Set([204, 205, 304]);

async function readAnswer(incoming: IncomingMessage, url: URL, maxBytes: number, cutPastLimit: boolean): Promise<Response> {
  const status = incoming.statusCode ?? 0;
  if (status < 200 || status > 599) throw new OutboundError(`${url.href} answered ${status}`);
  if (status >= 300 && status < 400) throw new OutboundError(`${url.href} answered ${status}: redirects are not followed`);
  const tooLarge = () => new OutboundError(`${url.href} is larger than ${maxBytes} bytes`);
  if (Number(incoming.headers['content-length']) > maxBytes && !cutPastLimit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  // Leaving the loop early (the limit reached) destroys the answer's stream and its connection.
  for await (const chunk of incoming as AsyncIterable<Buffer>) {
    if (size + chunk.length > maxBytes) {
      if (!cutPastLimit) throw tooLarge();
      chunks.push(chunk.subarray(0, maxBytes - size));
      size = maxBytes;
      break;
    }
    size += chunk.length;
    chunks.push(chunk);
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one);
  }
  return new Response(NULL_BODY.has(status) ? null : Buffer.concat(chunks), { status, headers });
}
