import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { sameHash } from '../accounts/secrets.js';
import { basicText } from './api-key.js';

/** What every Basic header was read as before atob: the reading basicText must keep. */
const lenient = (encoded: string) => Buffer.from(encoded, 'base64').toString('utf8');

test('a Basic credential reads as Buffer.from read it, whatever the header holds', () => {
  const id = 'ak_aCAhu4V0uFgE';
  const key = 'sk_YDDH5504NJOEgryn5yCjV5xh35O5IdQSaJWeXbEc6FY';
  const examples = [
    Buffer.from(`${id}:${key}`).toString('base64'),
    Buffer.from(`${id}:${key}`).toString('base64url'),
    Buffer.from('éléphant:clé').toString('base64'),
    Buffer.from('a:b').toString('base64').replace(/=+$/, ''),
    'YWJj=ZGVm',
    'YW Jj',
    '!!!',
    '',
  ];
  for (const encoded of examples) assert.equal(basicText(encoded), lenient(encoded), JSON.stringify(encoded));
  assert.equal(basicText(Buffer.from(`${id}:${key}`).toString('base64')), `${id}:${key}`);

  // Any bytes, in either alphabet, padded or not, with stray characters or spaces.
  const base64ish = fc.oneof(
    fc.uint8Array({ maxLength: 96 }).map((bytes) => Buffer.from(bytes).toString('base64')),
    fc.uint8Array({ maxLength: 96 }).map((bytes) => Buffer.from(bytes).toString('base64url')),
    fc.string({ unit: fc.constantFrom(...'ABCxyz019+/-_= .!é\t'), maxLength: 64 }),
  );
  fc.assert(
    fc.property(base64ish, (encoded) => basicText(encoded) === lenient(encoded)),
    { numRuns: 5000 },
  );
});

test('sameHash is string equality', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 50 }), fc.string({ maxLength: 50 }), (a, b) => sameHash(a, b) === (a === b) && sameHash(a, a)),
    { numRuns: 5000 },
  );
  assert.equal(sameHash('abc', 'abd'), false);
  assert.equal(sameHash('abc', 'abcd'), false);
});
