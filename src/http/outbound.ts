import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { isPrivateAddress, isPublicAddress, LOOPBACK } from './public-address.js';

/**
 * Every request this server makes to an address someone else chose (a client's metadata
 * document, a webhook) goes through one guard, so that nobody can make the server reach what
 * only it can reach: its loopback, its private network, the cloud's metadata service.
 *
 * - Only global unicast addresses are reached (isPublicAddress, public-address.ts).
 * - The host is resolved once; the request is refused if any answer is not public, and the socket
 *   connects to the addresses that were checked. Resolving again to connect would let DNS answer
 *   differently the second time (rebinding).
 * - https only; a redirect is not followed (it would name a host nobody checked): a 3xx fails.
 *   A caller may also allow private targets (privateTargets: webhooks in development), and plain
 *   http to those only: what travels in the clear then never leaves the private network.
 * - The answer is read whole, up to a size limit, within a connect and a total time limit.
 */

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
