import { createHmac, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import { sameHash } from '../accounts/secrets.js';

// Templates stay in src/views; compiled code runs from dist/src, so both places are looked at.
const VIEWS = [new URL('../views/', import.meta.url), new URL('../../../src/views/', import.meta.url)]
  .map((url) => fileURLToPath(url))
  .find((dir) => existsSync(path.join(dir, 'layout.eta')));
if (!VIEWS) throw new Error('src/views (the OAuth page templates) not found');

const eta = new Eta({ views: VIEWS, autoEscape: true, cache: true, autoTrim: false });

export interface Page {
  html: string;
  headers: Record<string, string>;
}

/**
 * Renders a template inside the layout. The inline stylesheet is allowed by a nonce, so the
 * policy forbids every script and every other source; no framing (RFC 9700 §4.16), no Referer
 * carrying the interaction URL anywhere (§4.2.4), nothing cached.
 */
export function renderPage(template: string, data: Record<string, unknown>): Page {
  const nonce = randomBytes(16).toString('base64');
  return {
    html: eta.render(`./${template}`, { ...data, nonce }),
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'`,
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'cache-control': 'no-store',
    },
  };
}

/**
 * The form token of one interaction: an HMAC of its uid under the cookie secret. A forged
 * cross-site POST has neither this value nor (SameSite=Lax) the interaction cookie.
 */
export function csrfToken(secrets: readonly string[], uid: string): string {
  return createHmac('sha256', secrets[0] ?? '')
    .update(`interaction-form:${uid}`)
    .digest('base64url');
}

/** Any configured secret is accepted, so rotating COOKIE_SECRETS does not break open forms. */
export function csrfValid(secrets: readonly string[], uid: string, sent: unknown): boolean {
  if (typeof sent !== 'string' || !sent) return false;
  return secrets.some((secret) => sameHash(csrfToken([secret], uid), sent));
}
