import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ForbiddenError } from '../errors.js';
import { hasScope, type Principal, principalOf } from '../http/authenticate.js';
import { PROBLEM_TYPE_BASE } from '../http/problem.js';
import { MCP_PATH } from '../oauth/resources.js';
import { packageVersion } from '../reference/package-version.js';
import { type ContentTool, contentTools, type ToolDeps } from './content.tools.js';

const INSTRUCTIONS =
  'Pages and blogs of the one website this connection was approved for. list_* filter and page through records, get_* read one, save_* insert (without id) or update (with id), delete_* delete. Errors come back as tool errors whose text is an RFC 9457 problem naming the fields at fault.';

/** Any route of the MCP server: only tokens issued for {base_url}/mcp, and at least reading. */
const ACCESS = { scope: 'everything:read', resource: 'mcp' } as const;

/** An AppError as a tool error: the problem document the REST API would have sent, as text. */
function problemResult(error: AppError): CallToolResult {
  const problem = {
    type: `${PROBLEM_TYPE_BASE}${error.type}`,
    title: error.title,
    status: error.status,
    detail: error.message,
    ...error.extra,
  };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(problem) }] };
}

/** The names of the tools a JSON-RPC message (or batch) calls. */
function calledTools(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) =>
    m && typeof m === 'object' && m.method === 'tools/call' && typeof m.params?.name === 'string' ? [m.params.name as string] : [],
  );
}

/**
 * One MCP server for one request (stateless): the tools act on the principal's website. The
 * tool list is the same for every caller; a call is checked for its scope here too, although the
 * HTTP layer has already refused it with 403.
 */
function serverFor(
  principal: Principal,
  tools: ReadonlyMap<string, ContentTool>,
  deps: ToolDeps,
  version: string,
  log: FastifyRequest['log'],
) {
  const server = new Server(
    { name: 'content-api', title: 'Content API', version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  const listing = [...tools.values()].map(({ name, title, description, inputSchema, outputSchema, annotations }) => ({
    name,
    title,
    description,
    inputSchema,
    outputSchema,
    annotations,
  }));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listing }) as never);
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const tool = tools.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    if (!hasScope(principal.scopes, tool.scope))
      return problemResult(new ForbiddenError(`The tool ${tool.name} needs the scope ${tool.scope}.`, tool.scope));
    try {
      const input = tool.validate(request.params.arguments);
      const output = await tool.run(deps, principal.siteId, input);
      return { content: [{ type: 'text', text: JSON.stringify(output) }], structuredContent: output };
    } catch (error) {
      if (error instanceof AppError) return problemResult(error);
      log.error({ err: error, tool: tool.name }, 'MCP tool failed');
      return problemResult(new AppError(500, 'Internal server error', 'The server failed to run this tool.'));
    }
  });
  return server;
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
    const server = serverFor(principal, tools, deps, version, request.log);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (error) {
      request.log.error({ err: error }, 'MCP request failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: ErrorCode.InternalError, message: 'Internal error' }, id: null }));
      }
    }
  }

  app.post(MCP_PATH, { schema: { hide: true }, config: ACCESS }, handle);
  // Stateless: no stream to open with GET, no session to end with DELETE (the transport's 405, as a problem).
  app.route({
    method: ['GET', 'DELETE'],
    url: MCP_PATH,
    schema: { hide: true },
    config: ACCESS,
    handler: async (_request, reply) => {
      reply.header('allow', 'POST');
      throw new AppError(405, 'Method not allowed', 'This MCP server is stateless: send every JSON-RPC message with POST.');
    },
  });
}
