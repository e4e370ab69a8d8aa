import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formOf, signIn, startOAuthApp } from '../../test/oauth.helpers.js';
import { databaseRateLimits } from '../http/database-rate-limits.js';
import {
  attemptLogin,
  LOGIN_ATTEMPTS,
  LOGIN_ATTEMPTS_PER_ACCOUNT,
  LOGIN_ATTEMPTS_PER_IP,
  LOGIN_WINDOW_SECONDS,
  loginLimits,
} from './sign-in.js';

/** Signed in: the next page is the website choice, no longer the login form. */
async function signsIn(step: Promise<{ status: number; html: string }>) {
  const page = await step;
  return page.status === 200 && formOf(page.html).step !== 'login';
}

// TRUST_PROXY=1 here, so that each X-Forwarded-For stands for a real client of its own.
const from = (n: number) => ({ 'x-forwarded-for': `198.51.100.${n}` });

test('one account is limited across all addresses; another account is not', async (t) => {
  const a = await startOAuthApp(t, { config: { trustProxy: 1 } });
  for (let i = 0; i < LOGIN_ATTEMPTS_PER_ACCOUNT; i++) {
    assert.equal((await signIn(a, a.owner.email, 'wrong password', from(i + 1))).status, 400, `attempt ${i + 1}`);
  }
  const blocked = await signIn(a, a.owner.email, a.owner.password, from(200));
  assert.equal(blocked.status, 429, 'a new address is refused too, even with the right password');
  assert.ok(Number(blocked.response.headers.get('retry-after')) > 0);
  assert.equal((await signIn(a, 'someone-else@example.com', 'wrong password', from(200))).status, 400);
});

test('one address is limited across all accounts; another address is not', async (t) => {
  const a = await startOAuthApp(t, { config: { trustProxy: 1 } });
  // The earlier attempts of a spray, straight into the counter: the browser flow is slow.
  const limits = databaseRateLimits(a.db.kysely);
  const perIp = loginLimits('', '198.51.100.7').find((l) => l.limit === LOGIN_ATTEMPTS_PER_IP)!;
  for (let i = 0; i < LOGIN_ATTEMPTS_PER_IP; i++) await limits.hit(perIp.key, LOGIN_WINDOW_SECONDS);
  assert.equal((await signIn(a, a.owner.email, a.owner.password, from(7))).status, 429);
  assert.ok(await signsIn(signIn(a, a.owner.email, a.owner.password, from(8))), 'the owner from elsewhere signs in');
});

test('a success clears the account counters, so the owner is not locked out by earlier typos', async (t) => {
  const a = await startOAuthApp(t, { config: { trustProxy: 1 } });
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < LOGIN_ATTEMPTS - 1; i++) assert.equal((await signIn(a, a.owner.email, 'typo', from(1))).status, 400);
    assert.ok(await signsIn(signIn(a, a.owner.email, a.owner.password, from(1))), `round ${round + 1}`);
  }
});

test('only failures count: successful sign-ins from one address never use up its limit, failures do', async (t) => {
  const a = await startOAuthApp(t, { config: { trustProxy: 1 } });
  // An office whose address is one failure short of the limit (its earlier typos, or a spray).
  const limits = databaseRateLimits(a.db.kysely);
  const perIp = loginLimits('', '198.51.100.9').find((l) => l.limit === LOGIN_ATTEMPTS_PER_IP)!;
  for (let i = 0; i < LOGIN_ATTEMPTS_PER_IP - 1; i++) await limits.hit(perIp.key, LOGIN_WINDOW_SECONDS);
  for (let i = 0; i < 3; i++) {
    assert.ok(await signsIn(signIn(a, a.owner.email, a.owner.password, from(9))), `success ${i + 1} is not counted`);
  }
  const failed = await signIn(a, 'someone-else@example.com', 'wrong password', from(9));
  assert.equal(failed.status, 400, 'the last failure the address is allowed');
  const blocked = await signIn(a, a.owner.email, a.owner.password, from(9));
  assert.equal(blocked.status, 429, 'then even the right password waits');
  assert.match(blocked.html, /Too many failed sign-in attempts\./);
});

test('a burst of wrong passwords cannot slip past the limit before the first is counted', async (t) => {
  const a = await startOAuthApp(t);
  const limits = databaseRateLimits(a.db.kysely);
  const burst = await Promise.all(
    Array.from({ length: LOGIN_ATTEMPTS + 3 }, () =>
      attemptLogin(a.db.kysely, limits, { email: a.owner.email, password: 'guess', ip: '198.51.100.10' }),
    ),
  );
  const statuses = burst.map((outcome) => (outcome.ok ? 200 : outcome.status)).sort();
  assert.deepEqual(statuses, [...Array(LOGIN_ATTEMPTS).fill(400), 429, 429, 429]);
});
