/**
 * Which IP addresses the outbound guard (outbound.ts) may connect to: global unicast only, judged
 * by value whatever the textual form; and the private ranges a caller may allow for development.
 */
import { BlockList, isIP } from 'node:net';

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
export function isPrivateAddress(address: string): boolean {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(text);
  if (family === 4) return PRIVATE.check(text, 'ipv4');
  if (family !== 6 || text.includes('%')) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(text);
  return mapped ? PRIVATE.check(mapped[1] as string, 'ipv4') : PRIVATE.check(text, 'ipv6');
}

/** Loopback, which a test may let the guard reach (testHooks.loopback). */
export const LOOPBACK = new BlockList();
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
