import { errors } from 'oidc-provider';
import { isScope, SCOPES, type Scope } from '../auth/scopes.js';

/**
 * The spec defines the product and order scopes for endpoints it does not specify, and this
 * service has none yet: they are offered and issued (an application written for the wider API
 * asks for them), but the consent page says they grant nothing, so an owner is not asked to trust
 * an application with something that does not exist.
 */
const NOTHING_YET = '(this service has no products or orders yet: it grants nothing for now)';

/** What the consent page, the console and the OpenAPI document say each scope allows (spec §5.5), in a website owner's words. */
export const SCOPE_TITLES: Readonly<Record<Scope, string>> = {
  'everything:read': 'Read your website’s pages and blog articles, and what changed in them',
  'everything:write':
    'Create, change and delete your website’s pages and blog articles, bring back earlier versions, and set up webhooks (and read all of it)',
  'pages:read': 'Read your website’s pages',
  'pages:write': 'Create, change and delete your website’s pages (and read them)',
  'blogs:read': 'Read your website’s blog articles',
  'blogs:write': 'Create, change and delete your website’s blog articles and their images (and read them)',
  'history:read': 'See what changed in your pages and blog articles, who changed it, and the earlier versions',
  'history:restore': 'Bring back an earlier version of a page or blog article, a deleted one too (and see what changed)',
  'webhooks:manage':
    'Set up, change and remove webhooks: messages about your website’s changes, sent to an address of the application’s choosing',
  'product:read': `Read products ${NOTHING_YET}`,
  'product:write': `Create and change products ${NOTHING_YET}`,
  'order:read': `Read orders ${NOTHING_YET}`,
  'order:write': `Create and change orders ${NOTHING_YET}`,
};

/** What a stored scope allows, in words; an unknown one as it is stored. */
export function scopeTitle(scope: string): string {
  return isScope(scope) ? SCOPE_TITLES[scope] : scope;
}

/**
 * oidc-provider silently drops scopes nobody defined; an application that misspells one should
 * hear about it (invalid_scope), and asking for nothing is no authorization at all. `offered` is
 * what the requested resource offers: the MCP server offers fewer scopes than the REST API.
 */
export function assertRequestedScopes(scope: unknown, offered: readonly string[] = SCOPES): void {
  const requested = typeof scope === 'string' ? scope.split(' ').filter(Boolean) : [];
  if (!requested.length) throw new errors.InvalidScope(`scope is required: one or more of ${offered.join(' ')}`, '');
  const unknown = requested.filter((s) => !offered.includes(s));
  if (unknown.length) {
    const known = unknown.every((s) => (SCOPES as readonly string[]).includes(s));
    const what = known ? 'scope not offered by this resource' : 'unknown scope';
    throw new errors.InvalidScope(`${what}: ${unknown.join(' ')}`, unknown.join(' '));
  }
}
