import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { requestIds } from './request-id.js';

const request = (id?: string | string[]) => ({ headers: id === undefined ? {} : { 'x-request-id': id } }) as unknown as IncomingMessage;

test("a request's id is the client's plain X-Request-Id, or this process's prefix and a count, never the same twice", () => {
  const next = requestIds();
  const own = Array.from({ length: 1000 }, () => next(request()));
  assert.equal(new Set(own).size, 1000, 'no id repeats');
  const prefixOf = (id: string) => id.slice(0, id.lastIndexOf('-'));
  const prefix = prefixOf(own[0]!);
  assert.match(prefix, /^[\w-]{16}$/, '96 random bits, base64url');
  assert.ok(
    own.every((id) => id.startsWith(`${prefix}-`)),
    'one prefix per process',
  );
  assert.notEqual(prefixOf(requestIds()(request())), prefix, 'another process draws another prefix');

  assert.equal(next(request('abc-123')), 'abc-123');
  assert.equal(next(request('a.b_c')), 'a.b_c');
  for (const refused of ['', 'x'.repeat(65), 'has space', 'line\u2028break', '<script>', ['a', 'b']]) {
    assert.ok(next(request(refused)).startsWith(`${prefix}-`), `not taken: ${JSON.stringify(refused)}`);
  }
});
