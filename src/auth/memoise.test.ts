import assert from 'node:assert/strict';
import { test } from 'node:test';
import { memoisePerTick } from './memoise.js';

const nextTick = () => new Promise((resolve) => setImmediate(resolve));

test('memoisePerTick computes a key once a tick, forgets everything when the tick ends, and past its limit computes every time', async () => {
  const computed: string[] = [];
  const hashed = memoisePerTick((key) => {
    computed.push(key);
    return `h(${key})`;
  }, 2);

  assert.equal(hashed('a'), 'h(a)');
  assert.equal(hashed('a'), 'h(a)');
  assert.equal(hashed('b'), 'h(b)');
  assert.deepEqual(computed, ['a', 'b'], 'the same tick asks once per key');

  assert.equal(hashed('c'), 'h(c)');
  assert.equal(hashed('c'), 'h(c)');
  assert.deepEqual(computed, ['a', 'b', 'c', 'c'], 'past the limit nothing more is remembered');

  await nextTick();
  assert.equal(hashed('a'), 'h(a)');
  assert.deepEqual(computed, ['a', 'b', 'c', 'c', 'a'], 'a new tick starts with nothing remembered');
});
