/**
 * Holds every JSON answer a test receives to the response schema its route declares. GET bodies
 * are sent pre-serialized (sendList, sendRecord), so Fastify never checks them against the
 * schema; without this, a field outside the schema or of the wrong type would go unnoticed.
 */

import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** One validator per schema object; a fresh Ajv each, since record schemas carry an $id. */
const validators = new WeakMap<object, ValidateFunction>();

function validatorFor(schema: object): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) {
    validate = addFormats(new Ajv({ strict: false, allErrors: true })).compile(schema);
    validators.set(schema, validate);
  }
  return validate;
}

/** The declared response schema of the route that answered, by the reference registry's routes. */
function declaredSchema(app: FastifyInstance, method: string, url: string, status: number): object | undefined {
  const path = url.split('?')[0]!.replace(/^\/webapps(?=\/api\/)/, '');
  for (const [endpoint, routes] of app.references.routes) {
    const pattern = new RegExp(`^${endpoint.replace(/:[^/]+/g, '[^/]+')}$`);
    if (!pattern.test(path)) continue;
    const route = routes.find((r) => r.method === method);
    return route?.schema.response?.[String(status)];
  }
  return undefined;
}

/** The body as the client reads it: a compressed answer (the client asked for it) decoded first. */
export function decodedBody(response: LightMyRequestResponse): string {
  const encoding = response.headers['content-encoding'];
  if (encoding === 'br') return brotliDecompressSync(response.rawPayload).toString('utf8');
  if (encoding === 'gzip') return gunzipSync(response.rawPayload).toString('utf8');
  return response.body;
}

export function assertDeclaredShape(app: FastifyInstance, method: string, url: string, response: LightMyRequestResponse): void {
  if (!String(response.headers['content-type'] ?? '').startsWith('application/json')) return;
  const schema = declaredSchema(app, method, url, response.statusCode);
  if (!schema) return;
  const validate = validatorFor(schema);
  if (!validate(JSON.parse(decodedBody(response)))) {
    throw new Error(
      `${method} ${url} answered ${response.statusCode} with a body outside its declared schema: ${JSON.stringify(validate.errors)}`,
    );
  }
}

/** Wraps app.inject so that every answer is checked; a mismatch rejects the inject call. */
export function checkResponses(app: FastifyInstance): void {
  const inject = app.inject.bind(app);
  const checked = async (options: InjectOptions | string) => {
    const response = await inject(options);
    const request = typeof options === 'string' ? { url: options } : options;
    assertDeclaredShape(app, (request.method ?? 'GET').toUpperCase(), String(request.url ?? request.path ?? '/'), response);
    return response;
  };
  app.inject = checked as unknown as FastifyInstance['inject'];
}
