/**
 * The scopes a credential may hold, and which scopes carry which. A route or MCP tool declares the
 * one scope it needs; a credential holds it when it was granted that scope or one that carries it.
 */

/** Every scope, in the order the consent page and the metadata list them. */
export const SCOPES = [
  'everything:read',
  'everything:write',
  'pages:read',
  'pages:write',
  'blogs:read',
  'blogs:write',
  'history:read',
  'history:restore',
  'webhooks:manage',
  'product:read',
  'product:write',
  'order:read',
  'order:write',
] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * The scopes that grant something here: all but product:* and order:*, which the spec defines for
 * endpoints this service does not have (docs/oauth.md). What an API credential may be limited to,
 * and what the OpenAPI document describes.
 */
export const GRANTING_SCOPES: readonly Scope[] = SCOPES.filter((s) => !s.startsWith('product:') && !s.startsWith('order:'));

/**
 * What each scope carries besides itself. A write carries its read (spec §5.5: everything:write
 * carries the reads, and so does each narrow write); everything:read carries every narrow read and
 * everything:write every narrow scope, so a credential granted the broad scopes keeps every
 * permission it had. Webhooks are managed with the write scope only: a hook sends the website's
 * changes wherever it points.
 */
const CARRIES: Readonly<Record<Scope, readonly Scope[]>> = {
  'everything:read': ['pages:read', 'blogs:read', 'history:read'],
  'everything:write': ['everything:read', 'pages:write', 'blogs:write', 'history:restore', 'webhooks:manage'],
  'pages:read': [],
  'pages:write': ['pages:read'],
  'blogs:read': [],
  'blogs:write': ['blogs:read'],
  'history:read': [],
  'history:restore': ['history:read'],
  'webhooks:manage': [],
  'product:read': [],
  'product:write': ['product:read'],
  'order:read': [],
  'order:write': ['order:read'],
};

/** A scope and everything it carries, directly or through another. */
function closureOf(scope: Scope): Scope[] {
  const found = new Set<Scope>([scope]);
  for (const next of found) for (const carried of CARRIES[next]) found.add(carried);
  return [...found];
}

/**
 * For each scope, the scopes that grant it: itself, then the others from the narrowest (carrying
 * least) to the broadest. Computed once from CARRIES, so a check is a few Set lookups on the
 * principal's scopes and never a database read.
 */
const GRANTED_BY = Object.fromEntries(
  SCOPES.map((needed) => {
    const broader = SCOPES.filter((s) => s !== needed && closureOf(s).includes(needed));
    return [needed, [needed, ...broader.sort((a, b) => closureOf(a).length - closureOf(b).length)]];
  }),
) as unknown as Readonly<Record<Scope, readonly Scope[]>>;

/** The scopes any of which grants `needed`: itself, then the broader ones. */
export function grantedBy(needed: Scope): readonly Scope[] {
  return GRANTED_BY[needed];
}

/** Whether credentials granted `scopes` hold `needed`: granted it, or a scope that carries it. */
export function hasScope(scopes: ReadonlySet<string>, needed: Scope): boolean {
  if (scopes.has(needed)) return true;
  for (const scope of GRANTED_BY[needed]) if (scopes.has(scope)) return true;
  return false;
}

/** What a route or tool needs: one scope, or any one of several (the MCP server, which every MCP scope reaches). */
export type ScopeNeed = Scope | readonly Scope[];

/** Whether credentials granted `scopes` hold what `need` asks: the scope, or one of the scopes. */
export function meetsNeed(scopes: ReadonlySet<string>, need: ScopeNeed): boolean {
  if (typeof need === 'string') return hasScope(scopes, need);
  return need.some((scope) => hasScope(scopes, scope));
}

/** The scopes a need names, space-separated, as RFC 6750's scope attribute lists them. */
export function scopeText(need: ScopeNeed): string {
  return typeof need === 'string' ? need : need.join(' ');
}

/** The read scopes `scopes` hold, granted or carried, in SCOPES order: what a webhook made with them may be sent. */
export function readScopesOf(scopes: ReadonlySet<string>): Scope[] {
  return SCOPES.filter((s) => s.endsWith(':read') && hasScope(scopes, s));
}

/** Whether `value` is a scope this service knows. */
export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
