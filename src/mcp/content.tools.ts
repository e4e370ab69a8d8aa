import type { FastifyInstance } from 'fastify';
import type { Scope } from '../auth/scopes.js';
import type { RecordType } from '../content/history/change-log.js';
import { ValidationError } from '../errors.js';
import { validatorFor } from '../http/validation.js';
import type { RouteInfo } from '../reference/reference.js';
import { type Input, OPERATIONS, type Operation, type Part, RECORD_TYPES, type Run } from './content.operations.js';
import { plain, type Schema, shown } from './tool-schema.js';

export interface ContentTool {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly scope: Scope;
  readonly inputSchema: Record<string, unknown>;
  readonly annotations: Record<string, boolean | string>;
  /** The arguments, validated, coerced and defaulted as the REST route does; a ValidationError names each bad field. */
  readonly validate: (args: unknown) => Input;
  readonly run: Run;
}

function inputSchemaOf(schema: RouteInfo['schema'], part: Part): unknown {
  const declared = schema[part];
  // The blog POST declares its body per media type; JSON is the one MCP carries.
  return declared && 'content' in declared && declared.content ? declared.content['application/json']?.schema : declared;
}

function withoutProperties(schema: Schema, names: readonly string[]): Schema {
  if (names.length === 0) return schema;
  const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).filter(([name]) => !names.includes(name)));
  return { ...schema, properties };
}

/** The route an operation stands for, with the type put in for a per-type one. */
function routeOf(app: FastifyInstance, op: Operation, type?: RecordType): RouteInfo {
  const endpoint = type ? op.endpoint.replace('{type}', type) : op.endpoint;
  const route = app.references.routes.get(endpoint)?.find((r) => r.method === op.method);
  if (typeof route?.scope !== 'string') throw new Error(`no route ${op.method} ${endpoint} with a scope to build the ${op.name} tool from`);
  return route;
}

/**
 * The tool's arguments: the route's schema for `part`, without what the tool does not take and
 * with its own defaults and descriptions; a per-type tool's routes must agree on it, and it gains `type`.
 */
function argumentsOf(op: Operation, routes: readonly RouteInfo[], perType: boolean): Schema {
  const [first, ...others] = routes.map((route) => {
    const declared = inputSchemaOf(route.schema, op.part);
    if (!declared) throw new Error(`${op.method} ${op.endpoint} declares no ${op.part} schema`);
    return plain(declared) as Schema;
  });
  if (others.some((other) => JSON.stringify(other) !== JSON.stringify(first)))
    throw new Error(`the routes of ${op.endpoint} take different ${op.part}: one ${op.name} tool cannot stand for them`);
  const schema: Schema = { ...first! };
  if (!op.without && !op.defaults && !op.describe && !perType) return schema;
  const properties = { ...schema.properties };
  for (const name of op.without ?? []) delete properties[name];
  for (const [name, value] of Object.entries(op.defaults ?? {})) properties[name] = { ...properties[name], default: value };
  for (const [name, description] of Object.entries(op.describe ?? {})) properties[name] = { ...properties[name], description };
  const required = schema.required?.filter((name) => name in properties);
  if (!perType) return { ...schema, properties, ...(required ? { required } : {}) };
  const type = { type: 'string', enum: [...RECORD_TYPES], description: 'page or blog' };
  return { ...schema, properties: { type, ...properties }, required: ['type', ...(required ?? [])] };
}

/**
 * How deep arguments may nest. A tool's arguments are an object of values and lists of values (two
 * levels); anything much deeper is no tool's, and a copy of it, by structuredClone or JSON, would
 * overflow the stack and answer a 500 where the caller sent a bad argument.
 */
const MAX_ARGUMENT_DEPTH = 32;

/** A copy of parsed JSON arguments, for the validator to change; a 400 naming the argument that nests too deep. */
function copyOf(value: unknown, depth = 0, field = 'arguments'): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_ARGUMENT_DEPTH) {
    throw new ValidationError([{ field, message: `nests more than ${MAX_ARGUMENT_DEPTH} levels deep` }]);
  }
  if (Array.isArray(value)) return value.map((item) => copyOf(item, depth + 1, field));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, copyOf(item, depth + 1, depth === 0 ? key : field)]));
}

/**
 * The tool's annotations, those that differ from the MCP specification's defaults (readOnlyHint
 * false, destructiveHint true, idempotentHint false, openWorldHint true): a client applies the
 * defaults to the rest. The destructive and idempotent hints mean nothing for a read-only tool.
 */
function hintsOf(op: Operation): Record<string, boolean> {
  if (op.method === 'GET') return { readOnlyHint: true, openWorldHint: false };
  const destructive = op.method === 'DELETE' || op.destructive === true;
  const idempotent = op.method !== 'POST';
  return { ...(destructive ? {} : { destructiveHint: false }), ...(idempotent ? { idempotentHint: true } : {}), openWorldHint: false };
}

/** Builds the tools from the routes registered so far; call it after the content and history routes. */
export function contentTools(app: FastifyInstance): ContentTool[] {
  return OPERATIONS.map((op) => {
    const perType = op.endpoint.includes('{type}');
    const routes = perType ? RECORD_TYPES.map((type) => routeOf(app, op, type)) : [routeOf(app, op)];
    const route = routes[0]!;
    if (routes.some((r) => r.scope !== route.scope)) throw new Error(`the routes of ${op.endpoint} need different scopes`);
    const input = argumentsOf(op, routes, perType);
    // The arguments are checked against the route's own schema for its part, by that part's
    // validator; the agent is shown the same schema without what only keeps values storable.
    const check = validatorFor<Input>(app, { schema: input, method: op.method, url: op.endpoint, httpPart: op.part }, 'arguments');
    return {
      name: op.name,
      title: op.title ?? route.schema.summary ?? op.name,
      // Only the tools its scopes allow are listed to an agent; the scope is named for its user.
      description: `${op.description} Needs scope ${route.scope}.`,
      scope: route.scope as Scope,
      inputSchema: shown(withoutProperties(input, op.hidden ?? [])) as Schema,
      annotations: hintsOf(op),
      validate(args) {
        // The validator coerces and fills defaults in place, as it does for a request.
        return check(copyOf(args && typeof args === 'object' ? args : {}));
      },
      run: op.run,
    };
  });
}
