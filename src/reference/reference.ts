/** Endpoint references built from route schemas: the JSON form and its Markdown rendering. */
import { grantedBy, type ScopeNeed } from '../auth/scopes.js';

interface JsonSchemaLike {
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchemaLike>;
  required?: string[];
  anyOf?: JsonSchemaLike[];
  items?: JsonSchemaLike;
  const?: unknown;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
}

export interface RouteInfo {
  method: string;
  url: string;
  scope: ScopeNeed | undefined;
  schema: {
    summary?: string;
    description?: string;
    querystring?: JsonSchemaLike;
    params?: JsonSchemaLike;
    /** A schema, or one per media type (`content`), as Fastify accepts. */
    body?: JsonSchemaLike & { content?: Record<string, { schema: JsonSchemaLike }> };
    response?: Record<string, JsonSchemaLike>;
  };
}

interface ParameterReference {
  name: string;
  type: string;
  required: boolean;
  description: string;
}

interface MethodReference {
  method: string;
  path: string;
  summary: string;
  description: string;
  scope: ScopeNeed | undefined;
  pathParameters: ParameterReference[];
  queryParameters: ParameterReference[];
  bodyFields: ParameterReference[];
  /** Fields of a multipart/form-data body, when the method also takes one. */
  formFields: ParameterReference[];
  responseFields: ParameterReference[];
  responses: string[];
}

export interface EndpointReference {
  endpoint: string;
  /** The same endpoint under /webapps/api, when it is served there too. */
  alias?: string;
  methods: MethodReference[];
}

/** A short type name for a schema: `integer`, `string (email)`, `"like" | "exact"`, `integer | string`. */
function typeName(schema: JsonSchemaLike | undefined): string {
  if (!schema) return 'any';
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (schema.anyOf) return [...new Set(schema.anyOf.map(typeName))].join(' | ');
  const type = Array.isArray(schema.type) ? schema.type.join(' | ') : (schema.type ?? 'any');
  if (type === 'array') return `array of ${typeName(schema.items)}`;
  const detail = schema.format ?? (schema.pattern ? `pattern ${schema.pattern}` : undefined);
  return detail ? `${type} (${detail})` : type;
}

function parametersOf(schema: JsonSchemaLike | undefined): ParameterReference[] {
  if (!schema?.properties) return [];
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, s]) => ({
    name,
    type: typeName(s),
    required: required.has(name),
    description: s.description ?? '',
  }));
}

function recordFieldsOf(response: Record<string, JsonSchemaLike> | undefined): ParameterReference[] {
  const ok = response?.['200'] ?? response?.['201'];
  const record = ok?.properties?.data?.items;
  return parametersOf(record);
}

export function buildReference(endpoint: string, routes: readonly RouteInfo[], aliased: boolean): EndpointReference {
  return {
    endpoint,
    ...(aliased ? { alias: endpoint.replace(/^\/api\//, '/webapps/api/') } : {}),
    methods: routes.map((r) => ({
      method: r.method,
      path: r.url,
      summary: r.schema.summary ?? '',
      description: r.schema.description ?? '',
      scope: r.scope,
      pathParameters: parametersOf(r.schema.params),
      queryParameters: parametersOf(r.schema.querystring),
      bodyFields: parametersOf(r.schema.body?.content ? r.schema.body.content['application/json']?.schema : r.schema.body),
      formFields: parametersOf(r.schema.body?.content?.['multipart/form-data']?.schema),
      responseFields: recordFieldsOf(r.schema.response),
      responses: Object.keys(r.schema.response ?? {}),
    })),
  };
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n+/g, ' ');
}

function table(title: string, rows: ParameterReference[], withRequired: boolean): string[] {
  if (rows.length === 0) return [];
  const head = withRequired ? '| Name | Type | Required | Meaning |\n|---|---|---|---|' : '| Name | Type | Meaning |\n|---|---|---|';
  const lines = rows.map((r) =>
    withRequired
      ? `| ${r.name} | ${cell(r.type)} | ${r.required ? 'yes' : 'no'} | ${cell(r.description)} |`
      : `| ${r.name} | ${cell(r.type)} | ${cell(r.description)} |`,
  );
  return [`### ${title}`, '', head, ...lines, ''];
}

export function renderMarkdown(reference: EndpointReference, baseUrl: string): string {
  const out = [
    `# ${reference.endpoint}`,
    '',
    reference.alias ? `Base URL: ${baseUrl}. Also served, identically, at ${reference.alias}.` : `Base URL: ${baseUrl}.`,
    '',
    'Authentication: `Authorization: Bearer <access token>` (OAuth 2.0), or legacy API credentials as HTTP Basic `API_ID:API_KEY` or the headers `X-Api-Id` and `X-Api-Key`. Errors are `application/problem+json` (RFC 9457).',
    '',
  ];
  for (const m of reference.methods) {
    out.push(`## ${m.method} ${m.path}`, '', `**${m.summary}.**`, '', m.description, '');
    if (typeof m.scope === 'string') {
      const [needed, ...broader] = grantedBy(m.scope);
      out.push(`Needs scope: \`${needed}\` (or ${broader.map((s) => `\`${s}\``).join(', ')}).`, '');
    }
    out.push(...table('Path parameters', m.pathParameters, true));
    out.push(...table('Query parameters', m.queryParameters, false));
    out.push(...table('Body fields (JSON)', m.bodyFields, false));
    out.push(...table('Form fields (multipart/form-data)', m.formFields, false));
    out.push(...table('Record fields in the response', m.responseFields, false));
    if (m.responses.length) out.push(`Success status: ${m.responses.join(', ')}.`, '');
  }
  return `${out
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()}\n`;
}
