import assert from 'node:assert/strict';
import { test } from 'node:test';
import { perTurn } from './turn-memo.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

test('perTurn computes a key once a turn, forgets everything when the turn ends, and past its limit computes every time', async () => {
  const computed: string[] = [];
  const hashed = perTurn((key) => {
    computed.push(key);
    return `h(${key})`;
  }, 2);

  assert.equal(hashed('a'), 'h(a)');
  assert.equal(hashed('a'), 'h(a)');
  assert.equal(hashed('b'), 'h(b)');
  assert.deepEqual(computed, ['a', 'b'], 'the same turn asks once per key');

  assert.equal(hashed('c'), 'h(c)');
  assert.equal(hashed('c'), 'h(c)');
  assert.deepEqual(computed, ['a', 'b', 'c', 'c'], 'past the limit nothing more is remembered');

  await nextTurn();
  assert.equal(hashed('a'), 'h(a)');
  assert.deepEqual(computed, ['a', 'b', 'c', 'c', 'a'], 'a new turn starts with nothing remembered');
});
