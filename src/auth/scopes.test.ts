import assert from 'node:assert/strict';
import { test } from 'node:test';
import { grantedBy, hasScope, meetsNeed, SCOPES, scopeText } from './scopes.js';

test('each scope is granted by itself and by the scopes that carry it, narrowest first', () => {
  assert.deepEqual(grantedBy('pages:read'), ['pages:read', 'pages:write', 'everything:read', 'everything:write']);
  assert.deepEqual(grantedBy('pages:write'), ['pages:write', 'everything:write']);
  assert.deepEqual(grantedBy('blogs:read'), ['blogs:read', 'blogs:write', 'everything:read', 'everything:write']);
  assert.deepEqual(grantedBy('blogs:write'), ['blogs:write', 'everything:write']);
  assert.deepEqual(grantedBy('history:read'), ['history:read', 'history:restore', 'everything:read', 'everything:write']);
  assert.deepEqual(grantedBy('history:restore'), ['history:restore', 'everything:write']);
  assert.deepEqual(grantedBy('webhooks:manage'), ['webhooks:manage', 'everything:write']);
  assert.deepEqual(grantedBy('everything:read'), ['everything:read', 'everything:write']);
  assert.deepEqual(grantedBy('everything:write'), ['everything:write']);
  assert.deepEqual(grantedBy('product:read'), ['product:read', 'product:write']);
});

test('the broad scopes hold what they held, and the narrow ones no more than their area', () => {
  const broadRead = new Set(['everything:read']);
  const broadWrite = new Set(['everything:write']);
  for (const scope of SCOPES.filter((s) => !/^(product|order):/.test(s))) assert.equal(hasScope(broadWrite, scope), true, scope);
  for (const scope of ['pages:read', 'blogs:read', 'history:read', 'everything:read'] as const)
    assert.equal(hasScope(broadRead, scope), true);
  for (const scope of ['pages:write', 'blogs:write', 'history:restore', 'webhooks:manage', 'everything:write'] as const) {
    assert.equal(hasScope(broadRead, scope), false, scope);
  }
  const pages = new Set(['pages:write']);
  assert.equal(hasScope(pages, 'pages:read'), true);
  for (const scope of ['blogs:read', 'history:read', 'webhooks:manage', 'everything:read'] as const)
    assert.equal(hasScope(pages, scope), false);
  assert.equal(hasScope(new Set(['product:write', 'order:write']), 'pages:read'), false, 'the scopes that grant nothing yet grant nothing');
  assert.equal(hasScope(new Set(['pages:read ']), 'pages:read'), false, 'a scope is matched exactly');
});

test('a need of several scopes is met by any one of them, and named space-separated', () => {
  assert.equal(meetsNeed(new Set(['history:restore']), ['pages:read', 'history:read']), true);
  assert.equal(meetsNeed(new Set(['webhooks:manage']), ['pages:read', 'history:read']), false);
  assert.equal(scopeText(['pages:read', 'history:read']), 'pages:read history:read');
  assert.equal(scopeText('pages:read'), 'pages:read');
});
