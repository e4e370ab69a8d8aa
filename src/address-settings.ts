/**
 * The settings that name addresses: PUBLIC_URL, TRUST_PROXY and CORS_ORIGINS, each parsed into
 * the one form the code compares against, or refused with a ConfigError that says why.
 */
import { isIP } from 'node:net';
import { ConfigError } from './config-error.js';

export type CorsOrigins = '*' | readonly string[];

export type TrustProxy = false | number | readonly string[];

/** proxy-addr's names for the reserved ranges, accepted as Fastify's trustProxy accepts them. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function trustedProxyOf(entry: string): string {
  if (PROXY_RANGE_NAMES.has(entry)) return entry;
  const [address = '', prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  const bits = family === 6 ? 128 : 32;
  const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
  if (!family || rest.length || !prefixOk) {
    throw new ConfigError(`TRUST_PROXY: "${entry}" is not an IP address, a CIDR range (10.0.0.0/8) or loopback/linklocal/uniquelocal`);
  }
  return entry;
}

/**
 * Off unless set. "true" is refused on purpose: believing every X-Forwarded-For lets any client
 * choose its own address, which is how the login limit was bypassed.
 */
export function trustProxyOf(raw: string): TrustProxy {
  const value = raw.trim().toLowerCase();
  if (['', '0', 'false', 'off', 'no'].includes(value)) return false;
  if (/^\d+$/.test(value)) {
    if (Number(value) > 10) throw new ConfigError(`TRUST_PROXY must be at most 10 hops, got ${value}`);
    return Number(value);
  }
  if (['true', 'on', 'yes', '*'].includes(value)) {
    throw new ConfigError('TRUST_PROXY=true would believe any client; give the number of proxies in front, or their addresses');
  }
  return Object.freeze(value.split(',').map((entry) => trustedProxyOf(entry.trim())));
}

export function publicUrlOf(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`PUBLIC_URL must be an absolute http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`PUBLIC_URL must use http or https, got "${raw}"`);
  }
  if (url.search || url.hash) throw new ConfigError('PUBLIC_URL must not have a query or fragment');
  // {base_url} is compared exactly (OAuth resource indicators), so it has one canonical form.
  return url.href.replace(/\/+$/, '');
}

/**
 * `*`, or comma-separated origins as a browser sends them in Origin: scheme, host and port only.
 * An entry with a path, a wildcard or user information would never equal an Origin header, so it
 * is refused rather than left to match nothing. Kept in the browser's serialization (lower-case
 * host, no default port) so that the comparison per request is a plain string equality.
 */
export function corsOriginsOf(raw: string): CorsOrigins {
  const value = raw.trim();
  if (value === '' || value === '*') return '*';
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  const origins = entries.map((entry) => {
    const url = URL.parse(entry);
    const bare = entry.replace(/\/$/, '');
    if (entry === '*') throw new ConfigError('CORS_ORIGINS is either * or a list of origins, not both');
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || bare.includes('*')) {
      throw new ConfigError(`CORS_ORIGINS: "${entry}" is not an http(s) origin such as https://app.example`);
    }
    if (url.pathname !== '/' || url.search || url.hash || bare.endsWith('?') || bare.endsWith('#')) {
      throw new ConfigError(`CORS_ORIGINS: "${entry}" has a path, query or fragment; an origin is scheme://host[:port] only`);
    }
    return url.origin;
  });
  if (!origins.length) throw new ConfigError('CORS_ORIGINS names no origin: give * or a comma-separated list of origins');
  return Object.freeze([...new Set(origins)]);
}
