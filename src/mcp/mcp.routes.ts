import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../auth/authenticate.js';
import { MCP_PATH, MCP_SCOPES } from '../auth/resources.js';
import { AppError } from '../errors.js';
import { jsonBody } from '../http/json-body.js';
import { packageVersion } from '../reference/package-version.js';
import type { ToolDeps } from './content.operations.js';
import { contentTools } from './content.tools.js';

/**
 * Any route of the MCP server: only tokens issued for {base_url}/mcp, with any scope it offers
 * (each carries a read); which tools a token may list and call is its scopes' to say (mcp.server.ts).
 */
const ACCESS = { scope: MCP_SCOPES.filter((s) => s.endsWith(':read')), resource: 'mcp' } as const;

/** JSON-RPC 2.0 error codes (§5.1), here since this module must not load the SDK (mcp.server.ts says why). */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

/** The body of a request whose JSON did not parse: answered as JSON-RPC, not by the problem handler. */
const NOT_JSON = Symbol('not JSON');

/** A JSON-RPC error that belongs to no request (id null), as the SDK's transport sends its own. */
function jsonRpcError(reply: FastifyReply, code: number, message: string) {
  return reply
    .code(400)
    .type('application/json')
    .header('cache-control', 'no-store')
    .send({ jsonrpc: '2.0', error: { code, message }, id: null });
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
    // JSON-RPC's answers to a body that is no message at all (the spec's examples for both are these).
    if (request.body === NOT_JSON) return jsonRpcError(reply, PARSE_ERROR, 'Parse error: the body is not valid JSON.');
    if (Array.isArray(request.body) && request.body.length === 0) {
      return jsonRpcError(reply, INVALID_REQUEST, 'Invalid Request: an empty batch.');
    }
    const principal = principalOf(request);
    // The SDK is loaded by the first MCP request (mcp.server.ts says why).
    const { answer } = await import('./mcp.server.js');
    const answered = await answer(request, { principal, tools, deps, version });
    reply.code(answered.status).header('cache-control', 'no-store');
    for (const [name, value] of answered.headers) if (name !== 'content-length') reply.header(name, value);
    return reply.send(answered.body === '' ? undefined : answered.body);
  }

  await app.register(async (mcp) => {
    // Bad JSON is a JSON-RPC parse error here (-32700), as the SDK's transport answers it, rather
    // than the problem+json 400 of the rest of the service. The parser is the service's own (the
    // same UTF-8 rule and refusal of __proto__ keys); only its error is replaced.
    mcp.removeContentTypeParser('application/json');
    mcp.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
      let value: unknown;
      try {
        value = jsonBody(request.headers['content-type'], body as Buffer);
      } catch {
        value = NOT_JSON;
      }
      done(null, value);
    });

    mcp.post(MCP_PATH, { schema: { hide: true }, config: ACCESS }, handle);
    // Stateless: no stream to open with GET, no session to end with DELETE (the transport's 405, as a
    // problem). Open to anyone: the method is wrong whoever asks, so a 401 would only send a client
    // to authorize for a request that cannot succeed.
    mcp.route({
      method: ['GET', 'DELETE'],
      url: MCP_PATH,
      schema: { hide: true },
      config: { public: true },
      handler: async (_request, reply) => {
        reply.header('allow', 'POST');
        throw new AppError(405, 'Method not allowed', 'This MCP server is stateless: send every JSON-RPC message with POST.');
      },
    });
  });
}
