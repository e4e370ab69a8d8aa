import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { buildTestApp, json } from '../test/helpers.js';
import * as errors from './errors.js';
import { FASTIFY_ERROR_TITLES, PROBLEM_TYPE_BASE } from './http/problem.js';

const ERRORS_MD = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

/** The problem types the code can produce: every AppError subclass, Fastify's titles, and the 500. */
async function producedTypes(t: Parameters<typeof buildTestApp>[0]): Promise<Set<string>> {
  const types = new Set<string>();
  for (const value of Object.values(errors)) {
    if (typeof value !== 'function' || !(value.prototype instanceof errors.AppError)) continue;
    // Each subclass takes its detail (or, for validation, its field errors) first: [] fits both.
    const error = new (value as unknown as new (first: never) => errors.AppError)([] as never);
    types.add(`${PROBLEM_TYPE_BASE}${error.type}`);
  }
  for (const [status, title] of Object.entries(FASTIFY_ERROR_TITLES)) {
    types.add(`${PROBLEM_TYPE_BASE}${new errors.AppError(Number(status), title, '').type}`);
  }
  // The 500 is built inside the error handler: provoke one rather than copy its title.
  const { app } = await buildTestApp(t);
  app.get('/fails', async () => {
    throw new Error('boom');
  });
  const failed = await app.inject({ url: '/fails' });
  assert.equal(failed.statusCode, 500);
  types.add(json(failed).type);
  return types;
}

test('docs/errors.md describes every problem type the API can answer, and no other', async (t) => {
  const produced = await producedTypes(t);
  assert.ok(produced.has('/problems/validation-failed') && produced.has('/problems/internal-server-error'));
  for (const type of produced) assert.ok(ERRORS_MD.includes(`\`${type}\``), `docs/errors.md lists ${type}`);
  const documented = new Set(ERRORS_MD.match(/\/problems\/[a-z0-9-]+/g));
  for (const type of documented) assert.ok(produced.has(type), `${type} in docs/errors.md is a type the code produces`);
});
