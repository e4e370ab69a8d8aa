import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ForbiddenError } from '../errors.js';
import { hasScope, principalOf } from '../http/authenticate.js';
import { MCP_PATH } from '../oauth/resources.js';
import { packageVersion } from '../reference/package-version.js';
import { contentTools, type ToolDeps } from './content.tools.js';

/** Any route of the MCP server: only tokens issued for {base_url}/mcp, and at least reading. */
const ACCESS = { scope: 'everything:read', resource: 'mcp' } as const;

/** The names of the tools a JSON-RPC message (or batch) calls. */
function calledTools(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) =>
    m && typeof m === 'object' && m.method === 'tools/call' && typeof m.params?.name === 'string' ? [m.params.name as string] : [],
  );
}

/**
 * The MCP server at {base_url}/mcp: Streamable HTTP, stateless (no session; any node answers any
 * request), JSON responses. Authentication, rate limits and the 401/403 challenges are the app's
 * own hooks, run before the request is handed to the SDK's transport.
 */
export async function registerMcp(app: FastifyInstance, { deps }: { deps: ToolDeps }): Promise<void> {
  const tools = new Map(contentTools(app).map((tool) => [tool.name, tool]));
  const version = packageVersion();

  async function handle(request: FastifyRequest, reply: FastifyReply) {
    const principal = principalOf(request);
    // MCP authorization, scope challenge: a call beyond the token's scopes is an HTTP 403 naming the scope.
    for (const name of calledTools(request.body)) {
      const tool = tools.get(name);
      if (tool && !hasScope(principal.scopes, tool.scope)) {
        throw new ForbiddenError(`The tool ${name} needs the scope ${tool.scope}.`, tool.scope);
      }
    }
    reply.hijack();
    // Headers the hooks set (request id, rate limit fields) would be lost with the hijacked reply.
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
    reply.raw.setHeader('x-request-id', request.id);
    reply.raw.setHeader('cache-control', 'no-store');
    // The SDK is loaded by the first MCP request (mcp.server.ts says why).
    const { serve } = await import('./mcp.server.js');
    await serve(request, reply, { principal, tools, deps, version });
  }

  app.post(MCP_PATH, { schema: { hide: true }, config: ACCESS }, handle);
  // Stateless: no stream to open with GET, no session to end with DELETE (the transport's 405, as a
  // problem). Open to anyone: the method is wrong whoever asks, so a 401 would only send a client
  // to authorize for a request that cannot succeed.
  app.route({
    method: ['GET', 'DELETE'],
    url: MCP_PATH,
    schema: { hide: true },
    config: { public: true },
    handler: async (_request, reply) => {
      reply.header('allow', 'POST');
      throw new AppError(405, 'Method not allowed', 'This MCP server is stateless: send every JSON-RPC message with POST.');
    },
  });
}
