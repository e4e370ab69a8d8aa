import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { compiledOnce } from './compiled-schemas.js';
import { installValidators } from './validation.js';

test('a schema is compiled once for equal schemas built afresh, and again for a different one', () => {
  const compiled: object[] = [];
  const compile = compiledOnce((schema) => {
    compiled.push(schema);
    return () => schema;
  });
  const first = compile({ type: 'object', properties: { a: { type: 'string' } } });
  assert.equal(compile({ type: 'object', properties: { a: { type: 'string' } } }), first, 'an equal schema, another object');
  assert.notEqual(compile({ type: 'object', properties: { a: { type: 'integer' } } }), first);
  assert.equal(compiled.length, 2);
});

test('two apps in one process each validate by their own schema, though both schemas have the same $id', async (t) => {
  const limited = async (maxLength: number) => {
    const app = Fastify();
    t.after(() => app.close());
    installValidators(app);
    const schema = {
      $id: 'Named',
      type: 'object',
      properties: { name: { type: 'string', maxLength } },
      additionalProperties: false,
    };
    app.post('/', { schema: { body: schema } }, async () => ({ ok: true }));
    await app.ready();
    return (name: string) => app.inject({ method: 'POST', url: '/', payload: { name } });
  };
  const short = await limited(3);
  const long = await limited(10);
  assert.equal((await short('abcdef')).statusCode, 400);
  assert.equal((await long('abcdef')).statusCode, 200);
  assert.equal((await short('abc')).statusCode, 200);
  assert.equal((await long('abcdefghijk')).statusCode, 400);
});
