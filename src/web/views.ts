import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { FastifyReply } from 'fastify';

// Templates stay in src/views; compiled code runs from dist/src, so both places are looked at.
const found = [new URL('../views/', import.meta.url), new URL('../../../src/views/', import.meta.url)]
  .map((url) => fileURLToPath(url))
  .find((dir) => existsSync(path.join(dir, 'layout.eta')));
if (!found) throw new Error('src/views (the page templates) not found');
export const VIEWS_DIR: string = found;

const eta = new Eta({ views: VIEWS_DIR, autoEscape: true, cache: true, autoTrim: false });

interface Page {
  html: string;
  headers: Record<string, string>;
}

interface PageOptions {
  /** Allow the page's own scripts (those carrying the nonce): comfort such as copy buttons, or /try. */
  script?: boolean;
  /** Allow fetch() to this origin (the /try page calls the token endpoint and the API). */
  connectSelf?: boolean;
}

/**
 * Renders a template inside the layout. The inline stylesheet is allowed by a nonce, so the
 * policy forbids every other source, and every script unless the page asks for its own (by the
 * same nonce); no framing (RFC 9700 §4.16), no Referer carrying the URL anywhere (§4.2.4),
 * nothing cached.
 */
export function renderPage(template: string, data: Record<string, unknown>, options: PageOptions = {}): Page {
  const nonce = randomBytes(16).toString('base64');
  const policy = [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    ...(options.script ? [`script-src 'nonce-${nonce}'`] : []),
    ...(options.connectSelf ? ["connect-src 'self'"] : []),
    "img-src 'self' data:",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ];
  return {
    html: eta.render(`./${template}`, { ...data, nonce, scriptNonce: options.script ? nonce : undefined }),
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': policy.join('; '),
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'cache-control': 'no-store',
    },
  };
}

export function sendPage(reply: FastifyReply, status: number, template: string, data: Record<string, unknown>, options?: PageOptions) {
  const page = renderPage(template, data, options);
  return reply.code(status).headers(page.headers).send(page.html);
}
