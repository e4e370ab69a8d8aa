import fastJsonStringify from 'fast-json-stringify';
import type { FastifyInstance } from 'fastify';

/**
 * Compiles each distinct schema once per process, whatever app asks. Compiling route schemas
 * (Ajv validators, fast-json-stringify serializers, the MCP tools' arguments) was most of the time
 * an app took to build, and a process builds the same schemas for every app it makes: one for a
 * worker, hundreds in a test file. A compiled function depends only on its schema and its
 * compiler's options, so apps may share it. The key is the schema's JSON, as equal schemas built
 * afresh for each app are different objects.
 */
export function compiledOnce<T>(compile: (schema: object) => T): (schema: object) => T {
  const compiled = new Map<string, T>();
  return (schema) => {
    const key = JSON.stringify(schema);
    let found = compiled.get(key);
    if (found === undefined) {
      found = compile(schema);
      compiled.set(key, found);
    }
    return found;
  };
}

const serializer = compiledOnce((schema) => fastJsonStringify(schema));

/** Response serializers by schema, as Fastify's own compiler makes them (no shared schemas, no options). */
export function installSerializers(app: FastifyInstance): void {
  app.setSerializerCompiler(({ schema }) => serializer(schema));
}
