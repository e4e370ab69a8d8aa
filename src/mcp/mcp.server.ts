/**
 * The MCP SDK's side of /mcp: the server and transport of one request. Loaded on the first MCP
 * request rather than at start, since the SDK and its schema library add about 8 MB to every
 * process's memory, used or not.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { type CallToolResult, ErrorCode, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyRequest } from 'fastify';
import { insufficientScope } from '../auth/authenticate.js';
import type { Principal } from '../auth/principal.js';
import { hasScope } from '../auth/scopes.js';
import { actorOf } from '../content/history/change-log.js';
import { AppError } from '../errors.js';
import { PROBLEM_TYPE_BASE } from '../http/problem.js';
import type { ToolDeps } from './content.operations.js';
import type { ContentTool } from './content.tools.js';

const INSTRUCTIONS =
  'Pages and blogs of the one website this connection was approved for. list_* filter and page through records (a few fields each unless fields or allFields asks for more), get_* read one whole, save_* insert (without id) or update (with id), delete_* delete; list_changes reads what changed after a cursor, list_revisions lists the earlier versions of a page or blog, restore_revision brings one back. Errors come back as tool errors whose text is an RFC 9457 problem naming the fields at fault.';

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

/**
 * A JSON-RPC error the SDK sends with this code and exactly this message (McpError would put
 * "MCP error -32602:" before it, and the SDK's client puts that before it again).
 */
function protocolError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code });
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The tool and arguments a tools/call names. A call the schema of tools/call refuses is invalid
 * params (-32602), which the MCP specification (tools, protocol errors) makes a JSON-RPC error;
 * arguments that are an object but wrong for the tool are the tool's to refuse, as a tool error.
 */
function callOf(params: unknown): { name: string; args: Record<string, unknown> } {
  if (!isObject(params))
    throw protocolError(ErrorCode.InvalidParams, 'Invalid params: tools/call needs params {"name": …, "arguments": {…}}.');
  if (typeof params.name !== 'string') throw protocolError(ErrorCode.InvalidParams, 'Invalid params: name must be a tool name (a string).');
  const args = params.arguments;
  if (args !== undefined && !isObject(args)) {
    const kind = args === null ? 'null' : Array.isArray(args) ? 'an array' : `a ${typeof args}`;
    throw protocolError(ErrorCode.InvalidParams, `Invalid params: arguments must be an object (or left out), not ${kind}.`);
  }
  return { name: params.name, args: args ?? {} };
}

/**
 * One MCP server for one request (stateless): the tools act on the principal's website. The
 * tools listed are those the token's scopes allow; a call to another is a tool error naming the
 * scope it needs (a 403 problem as text), so an agent reads why, where an HTTP 403 would end its
 * whole request.
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
  const allowed = [...tools.values()].filter((tool) => hasScope(principal.scopes, tool.scope));
  const listing = allowed.map(({ name, title, description, inputSchema, annotations }) => ({
    name,
    title,
    description,
    inputSchema,
    annotations,
  }));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listing }) as never);
  // tools/call is answered from the request as sent: the SDK parses the params of a handler set
  // with setRequestHandler before the handler runs, and answers params it cannot parse (none,
  // arguments that are no object) with -32603, internal error, and its schema library's dump.
  server.fallbackRequestHandler = async (request): Promise<CallToolResult> => {
    if (request.method !== 'tools/call') throw protocolError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`);
    const call = callOf(request.params);
    const tool = tools.get(call.name);
    if (!tool) throw protocolError(ErrorCode.InvalidParams, `Unknown tool: ${call.name}`);
    if (!hasScope(principal.scopes, tool.scope)) return problemResult(insufficientScope(`The tool ${tool.name}`, principal, tool.scope));
    try {
      const input = tool.validate(call.args);
      const output = await tool.run(deps, principal.siteId, input, actorOf(principal, 'mcp'));
      return { content: [{ type: 'text', text: JSON.stringify(output) }], structuredContent: output };
    } catch (error) {
      if (error instanceof AppError) return problemResult(error);
      log.error({ err: error, tool: tool.name }, 'MCP tool failed');
      return problemResult(new AppError(500, 'Internal server error', 'The server failed to run this tool.'));
    }
  };
  return server;
}

/** The request as a fetch Request, for the SDK's transport; its body is passed already parsed. */
function webRequestOf(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  return new Request(`${request.protocol}://${request.host}${request.url}`, { method: request.method, headers });
}

/** An answer of the SDK's transport, read whole. */
export interface McpAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

/**
 * Answers one request with a fresh server and transport, closed once the answer is read. The
 * answer is returned rather than written to the socket, so the app sends it as any other
 * (compressed when the client asks, with the headers every answer carries). It is read whole:
 * the transport answers JSON (enableJsonResponse), never an event stream, and the GET that would
 * open one is a 405 (mcp.routes.ts).
 */
export async function answer(
  request: FastifyRequest,
  { principal, tools, deps, version }: { principal: Principal; tools: ReadonlyMap<string, ContentTool>; deps: ToolDeps; version: string },
): Promise<McpAnswer> {
  const server = serverFor(principal, tools, deps, version, request.log);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  try {
    await server.connect(transport);
    const response = await transport.handleRequest(webRequestOf(request), { parsedBody: request.body });
    return { status: response.status, headers: response.headers, body: await response.text() };
  } catch (error) {
    request.log.error({ err: error }, 'MCP request failed');
    const body = JSON.stringify({ jsonrpc: '2.0', error: { code: ErrorCode.InternalError, message: 'Internal error' }, id: null });
    return { status: 500, headers: new Headers({ 'content-type': 'application/json' }), body };
  } finally {
    await transport.close();
    await server.close();
  }
}
