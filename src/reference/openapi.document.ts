import type { SwaggerOptions, SwaggerTransform } from '@fastify/swagger';
import type { Config } from '../config.js';
import { oauthPaths } from './oauth.openapi.js';
import { oauthSchemas } from './oauth.schemas.js';
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
        description:
          'Pages and blogs of one website. The page and blog endpoints (/api/page…, /api/blog…) and the change feed (/api/changes) are also served under /webapps/api/… with the same behaviour, and answer their own reference in Markdown to `Accept: text/markdown` at both addresses; every other endpoint, the OAuth ones included, has the one address listed here. Errors are RFC 9457 `application/problem+json` (the `Problem` schema); the OAuth endpoints under /api/auth answer RFC 6749 errors instead, except a 429 beyond a rate limit.',
      },
      servers: [{ url: config.publicUrl }],
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
                scopes: {
                  'everything:read': 'Read operations across the API',
                  'everything:write': 'Write operations across the API, and the corresponding reads',
                },
              },
            },
          },
          apiKeyBasic: { type: 'http', scheme: 'basic', description: 'Legacy credentials: API ID as user name, API Key as password' },
          apiId: { type: 'apiKey', in: 'header', name: 'X-Api-Id' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
        },
      },
    },
    transform: documentRoute,
  };
}

/**
 * Every GET answers 304 to an If-None-Match that names its ETag: src/http/representation.ts gives each GET
 * route's 200 one, and /images/<name> sets its own. Listed here, once, for every generated GET.
 */
const NOT_MODIFIED = {
  description: 'Not modified: If-None-Match names the current ETag; no body',
  type: 'null',
  headers: { ETag: { type: 'string', description: 'The current strong entity tag' } },
} as const;

/**
 * A route's operation: its schema plus the problems it can answer, its 304 if it is a GET, and,
 * with a scope, its security. A route that declares no success response (an image, sent as a
 * stream) gets a 200 described by its summary, since @fastify/swagger adds its default 200 only to
 * a route without any response. Documentation only: these statuses never enter the route's own
 * schema.response, where Fastify would serialize problem bodies through them and change their bytes.
 */
export const documentRoute: SwaggerTransform = ({ schema, url, route }) => {
  if (!schema || schema.hide) return { schema, url };
  const scope = route.config?.scope;
  const declared = (schema.response ?? {}) as Record<string, unknown>;
  const succeeds = Object.keys(declared).some((status) => status.startsWith('2'));
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const response = {
    ...problemResponses(problemStatuses(route)),
    ...(succeeds ? {} : { 200: { description: schema.summary ?? 'Success', type: 'null' } }),
    ...(methods.includes('GET') ? { 304: NOT_MODIFIED } : {}),
    ...declared,
  };
  return {
    schema: {
      ...schema,
      response,
      ...(scope ? { security: [{ oauth2: [scope] }, { apiKeyBasic: [] }, { apiId: [], apiKey: [] }] } : {}),
    } as typeof schema,
    url,
  };
};
