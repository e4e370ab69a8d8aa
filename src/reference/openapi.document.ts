import type { SwaggerOptions, SwaggerTransform } from '@fastify/swagger';
import { GRANTING_SCOPES, grantedBy, type ScopeNeed } from '../auth/scopes.js';
import type { Config } from '../config.js';
import { BODY_LIMIT_BYTES, HEADER_LIMIT_BYTES } from '../http/limits.js';
import { SCOPE_TITLES } from '../oauth/scopes.js';
import { oauthPaths } from './oauth.openapi.js';
import { oauthSchemas } from './oauth.schemas.js';
import { COMPONENT, CONDITIONAL, COUNTED, finishDocument } from './openapi.finish.js';
import { packageVersion } from './package-version.js';
import { Problem, problemResponses, problemStatuses } from './problems.openapi.js';

/**
 * @fastify/swagger's options: what the generated document holds besides the routes' own schemas.
 * /api/openapi.json and /docs both read the one document these produce.
 */
export function openapiOptions(config: Config): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Content API',
        version: packageVersion(),
        // The package is private: no licence is granted with the document.
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        // The front door says what runs here and who runs it.
        contact: { name: 'This service’s front door', url: `${config.publicUrl}/` },
        description:
          'Pages and blogs of one website. The page and blog endpoints (/api/page…, /api/blog…) and the change feed (/api/changes) are also served under /webapps/api/… with the same behaviour, and answer their own reference in Markdown to `Accept: text/markdown` at both addresses; they are listed here once, under /api, so that a generated client has each operation once. Every other endpoint, the OAuth ones included, has the one address listed here. Writes take JSON (a blog with images, a multipart form); the hosted original’s bodies (text/json, the record as the `data` field of a urlencoded or multipart form with apiID and apiKey) are accepted too but not offered here (docs/compat.md). operationIds are stable across releases. Errors are RFC 9457 `application/problem+json` (the `Problem` schema); the OAuth endpoints under /api/auth answer RFC 6749 errors instead, except a 429 beyond a rate limit.',
      },
      // Public: every client of a deployment calls it here.
      servers: [{ url: config.publicUrl, 'x-internal': false } as { url: string }],
      // Declared tags set the order of /docs: the content first, the authorization server last.
      tags: [
        { name: 'pages', description: 'The website’s pages' },
        { name: 'blogs', description: 'Blog articles, with their images' },
        { name: 'changes', description: 'The change feed: every change of a page or blog, by whom, in order (docs/history.md)' },
        {
          name: 'webhooks',
          description: 'Signed notifications of the website’s changes, sent to the receivers it registers (docs/webhooks.md)',
        },
        { name: 'images', description: 'Uploaded image files; public' },
        { name: 'oauth', description: 'The OAuth 2.0 authorization server (docs/oauth.md); its errors are RFC 6749 JSON' },
      ],
      paths: oauthPaths(config),
      components: {
        schemas: { Problem, ...oauthSchemas(config.publicUrl) },
        securitySchemes: {
          oauth2: {
            type: 'oauth2',
            description:
              'Authorization code with PKCE (S256) and resource (RFC 8707, this server’s address). Every client is public: there is no client secret. /docs Authorize uses the demo client (docs/oauth.md).',
            flows: {
              authorizationCode: {
                authorizationUrl: `${config.publicUrl}/api/auth/authorize`,
                tokenUrl: `${config.publicUrl}/api/auth/token`,
                refreshUrl: `${config.publicUrl}/api/auth/token`,
                scopes: OFFERED_SCOPES,
              },
            },
          },
          apiKeyBasic: { type: 'http', scheme: 'basic', description: 'Legacy credentials: API ID as user name, API Key as password' },
          apiId: { type: 'apiKey', in: 'header', name: 'X-Api-Id' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
        },
      },
    },
    // A schema with an $id is a component of that name, referenced where it is used; the few
    // without one keep the plugin's own def-N names (a test requires that there be none).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: documentRoute,
    transformObject: (document) =>
      finishDocument(('openapiObject' in document ? document.openapiObject : {}) as never, {
        bodyBytes: BODY_LIMIT_BYTES,
        headerBytes: HEADER_LIMIT_BYTES,
        fileBytes: config.uploads.maxFileBytes,
        files: config.uploads.maxFiles,
      }) as never,
  };
}

/** The scopes an operation may need, with what each allows (the product and order scopes grant nothing here). */
const OFFERED_SCOPES = Object.fromEntries(GRANTING_SCOPES.map((s) => [s, SCOPE_TITLES[s]]));

/**
 * An operation's security: a token granted its scope or any scope that carries it (OpenAPI lists
 * alternatives, any one of which suffices), or API credentials.
 */
function securityOf(scope: ScopeNeed): object[] {
  const needed = typeof scope === 'string' ? grantedBy(scope) : scope;
  return [...needed.map((s) => ({ oauth2: [s] })), { apiKeyBasic: [] }, { apiId: [], apiKey: [] }];
}

/**
 * Every GET answers 304 to an If-None-Match that names its ETag: src/http/representation.ts gives each GET
 * route's 200 one, and /images/<name> sets its own. Listed here, once, for every generated GET.
 */
const NOT_MODIFIED = { description: 'Not modified: If-None-Match names the current ETag; no body', type: 'null' } as const;

/**
 * The media types a generated client is offered: JSON, and multipart where the form carries
 * files (a blog's images). The other bodies the routes take (text/json, the record as the `data`
 * field of a urlencoded or multipart form, credentials as form fields) are the hosted original's,
 * kept for its clients and described in docs/compat.md; a generator given a choice picks none.
 */
function offeredBodies(body: unknown): unknown {
  const content = (body as { content?: Record<string, { schema: { $id?: unknown } }> } | undefined)?.content;
  if (!content) return named(body);
  const offered: Record<string, { schema: unknown }> = {};
  const record = content['application/json']?.schema;
  if (record) offered['application/json'] = { schema: named(record) };
  const form = content['multipart/form-data']?.schema as { properties?: Record<string, unknown> } | undefined;
  const { apiID: _id, apiKey: _key, ...fields } = form?.properties ?? {};
  if (form && Object.keys(fields).some((field) => field !== 'data')) {
    // Named after the record's input: BlogInput's form is BlogForm.
    const name = typeof record?.$id === 'string' ? record.$id.replace(/Input$/, 'Form') : undefined;
    offered['multipart/form-data'] = { schema: named({ ...form, properties: fields, ...(name ? { $id: name } : {}) }) };
  }
  return { content: offered };
}

/** @fastify/swagger's key for a response's description, kept apart from its schema's. */
const RESPONSE_DESCRIPTION = 'x-response-description';

/** What a success answer is, in words: a read answers what its summary names; a write says what it did. */
function successDescription(status: string, read: boolean, summary: string | undefined): string | undefined {
  if (status === '200') return read ? summary : 'Done: the record as it is now';
  return { 201: 'Created: the new record, with its address in Location', 202: 'Accepted: queued', 204: 'Done; no body' }[status];
}

/** A schema with an $id, marked to become the component of that name (openapi.finish.ts). */
function named(schema: unknown): unknown {
  if (!schema || typeof schema !== 'object' || typeof (schema as { $id?: unknown }).$id !== 'string') return schema;
  const { $id, ...rest } = schema as { $id: string };
  return { ...rest, [COMPONENT]: $id };
}

/**
 * A route's operation: its schema plus the problems it can answer, its 304 if it is a GET, and,
 * with a scope, its security. A route that declares no success response (an image, sent as a
 * stream) gets a 200 described by its summary, since @fastify/swagger adds its default 200 only to
 * a route without any response. Documentation only: these statuses never enter the route's own
 * schema.response, where Fastify would serialize problem bodies through them and change their bytes.
 * Its bodies are the ones offered to generators (offeredBodies), and the schemas with an $id
 * become named components.
 */
export const documentRoute: SwaggerTransform = ({ schema, url, route }) => {
  if (!schema || schema.hide) return { schema, url };
  const scope = route.config?.scope;
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const declared = Object.fromEntries(
    Object.entries((schema.response ?? {}) as Record<string, object>).map(([status, response]) => [
      status,
      { ...(named(response) as object), [RESPONSE_DESCRIPTION]: successDescription(status, methods.includes('GET'), schema.summary) },
    ]),
  );
  const succeeds = Object.keys(declared).some((status) => status.startsWith('2'));
  const response = {
    ...problemResponses(problemStatuses(route)),
    ...(succeeds ? {} : { 200: { description: schema.summary ?? 'Success', type: 'null' } }),
    ...(methods.includes('GET') ? { 304: NOT_MODIFIED } : {}),
    ...declared,
  };
  return {
    schema: {
      ...schema,
      ...(schema.body ? { body: offeredBodies(schema.body) } : {}),
      response,
      ...(scope ? { security: securityOf(scope) } : {}),
      ...(route.config?.conditional ? { [CONDITIONAL]: true } : {}),
      ...(scope || route.config?.counted ? { [COUNTED]: true } : {}),
    } as typeof schema,
    url,
  };
};
