import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import { cookieJar } from './cookies.js';

const COOKIE = '_console_flash';
const PATH = '/console';

/** What a console page says once after a POST's 303: a notice, and a new API key at most once. */
export interface Flash {
  notice?: string;
  error?: string;
  /** A just-created credential: its key exists nowhere else, so it is shown on this one page. */
  credential?: { apiId: string; apiKey: string; label: string };
  /** A webhook's just-made signing secret (created or rotated): like an API key, shown on this one page. */
  webhookSecret?: { hookId: number; secret: string; rotated: boolean };
  /** A just-registered OAuth client. */
  clientId?: string;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'cms', 'console-flash', 32));
}

/**
 * Sealed with AES-256-GCM under a key derived from the first cookie secret: the message (an API
 * key) never sits readable in the browser's cookie store, and nobody can forge one.
 */
function seal(secret: string, flash: Flash): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(secret), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(flash), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

function open(secrets: readonly string[], value: string): Flash | undefined {
  const raw = Buffer.from(value, 'base64url');
  if (raw.length < 29) return undefined;
  for (const secret of secrets) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', keyOf(secret), raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
      return JSON.parse(text) as Flash;
    } catch {
      // another secret (COOKIE_SECRETS being rotated), or a forged or damaged value
    }
  }
  return undefined;
}

export function setFlash(provider: Provider, secrets: readonly string[], request: FastifyRequest, reply: FastifyReply, flash: Flash) {
  cookieJar(provider, request, reply).set(COOKIE, seal(secrets[0] ?? '', flash), {
    httpOnly: true,
    sameSite: 'lax',
    path: PATH,
    signed: false,
  });
}

/** Reads the flash and deletes it: a reload of the page no longer shows it. */
export function takeFlash(provider: Provider, secrets: readonly string[], request: FastifyRequest, reply: FastifyReply): Flash {
  const jar = cookieJar(provider, request, reply);
  const value = jar.get(COOKIE, { signed: false });
  if (!value) return {};
  jar.set(COOKIE, null, { httpOnly: true, sameSite: 'lax', path: PATH, signed: false });
  return open(secrets, value) ?? {};
}
