import { GRANTING_SCOPES, SCOPES, type Scope } from './scopes.js';

/** The protected resources this one authorization server issues tokens for (RFC 8707). */
export type ResourceName = 'api' | 'mcp';

export const MCP_PATH = '/mcp';

/**
 * The scopes the MCP server offers: its tools read and write pages and blogs and read and restore
 * their history; it has no webhook tools (and, as the REST API, no products or orders).
 */
export const MCP_SCOPES: readonly Scope[] = GRANTING_SCOPES.filter((s) => s !== 'webhooks:manage');

export interface ProtectedResource {
  readonly name: ResourceName;
  /** The resource indicator, compared exactly: {base_url} or {base_url}/mcp. */
  readonly url: string;
  /** Scopes a client may ask for at this resource. */
  readonly scopes: readonly string[];
  /** Where its RFC 9728 metadata is served (the well-known path with the resource's path appended). */
  readonly metadataPath: string;
  readonly title: string;
}

/**
 * The content API at {base_url}, and the MCP server at {base_url}/mcp. Tokens are bound to one of
 * them (the audience), so an agent's token cannot call the REST API and an application's REST
 * token cannot drive the MCP tools.
 */
export function protectedResources(publicUrl: string): Record<ResourceName, ProtectedResource> {
  return {
    api: {
      name: 'api',
      url: publicUrl,
      scopes: SCOPES,
      metadataPath: '/.well-known/oauth-protected-resource',
      title: 'Content API',
    },
    mcp: {
      name: 'mcp',
      url: `${publicUrl}${MCP_PATH}`,
      scopes: MCP_SCOPES,
      metadataPath: `/.well-known/oauth-protected-resource${MCP_PATH}`,
      title: 'Content MCP server',
    },
  };
}

export function resourceByUrl(publicUrl: string, url: unknown): ProtectedResource | undefined {
  return Object.values(protectedResources(publicUrl)).find((r) => r.url === url);
}
