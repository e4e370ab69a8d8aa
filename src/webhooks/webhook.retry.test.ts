import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatTimestamp } from '../db/time.js';
import { FAILING_DISABLE_MS, failingTooLong, nextDeliveryState, retryAfterSeconds } from './webhook.retry.js';

const SCHEDULE = [5, 300, 1800];
const NOW = 1_000_000;
/** The middle of the jitter: the schedule's delay itself. */
const AT = { schedule: SCHEDULE, nowMs: NOW, random: 0.5 };

test('any 2xx is delivered, at any step, also past the schedule', () => {
  for (const statusCode of [200, 201, 204, 299]) {
    assert.deepEqual(nextDeliveryState({ statusCode }, 0, AT), { state: 'delivered' });
    assert.deepEqual(nextDeliveryState({ statusCode }, SCHEDULE.length, AT), { state: 'delivered' });
  }
});

test('a 410 gives the delivery up and disables its hook at once, whatever is left of the schedule', () => {
  assert.deepEqual(nextDeliveryState({ statusCode: 410 }, 0, AT), { state: 'failed', disable: 'gone' });
  assert.deepEqual(nextDeliveryState({ statusCode: 410, retryAfterS: 10 }, 1, AT), { state: 'failed', disable: 'gone' });
});

test('another failure is due again after the schedule entry of its step, on the next step', () => {
  for (const statusCode of [null, 199, 300, 400, 404, 429, 500, 503]) {
    assert.deepEqual(nextDeliveryState({ statusCode }, 0, AT), { state: 'pending', step: 1, dueMs: NOW + 5000 }, String(statusCode));
  }
  assert.deepEqual(nextDeliveryState({ statusCode: 500 }, 1, AT), { state: 'pending', step: 2, dueMs: NOW + 300_000 });
  assert.deepEqual(nextDeliveryState({ statusCode: 500 }, 2, AT), { state: 'pending', step: 3, dueMs: NOW + 1_800_000 });
});

test('the failure after the last entry of the schedule gives the delivery up, without disabling its hook', () => {
  assert.deepEqual(nextDeliveryState({ statusCode: 500 }, SCHEDULE.length, AT), { state: 'failed' });
  assert.deepEqual(nextDeliveryState({ statusCode: null }, SCHEDULE.length + 3, AT), { state: 'failed' });
  // An empty schedule: the first failure is the last.
  assert.deepEqual(nextDeliveryState({ statusCode: 500 }, 0, { ...AT, schedule: [] }), { state: 'failed' });
});

test('the delay is jittered by up to 10 % either way', () => {
  const due = (random: number) => {
    const next = nextDeliveryState({ statusCode: 500 }, 1, { ...AT, random });
    assert.equal(next.state, 'pending');
    return next.state === 'pending' ? next.dueMs - NOW : Number.NaN;
  };
  assert.equal(due(0), 270_000);
  assert.equal(due(1), 330_000);
  assert.equal(due(0.25), 285_000);
});

test("a receiver's Retry-After replaces the schedule's delay, without jitter, but not the step count", () => {
  assert.deepEqual(nextDeliveryState({ statusCode: 429, retryAfterS: 60 }, 0, { ...AT, random: 0 }), {
    state: 'pending',
    step: 1,
    dueMs: NOW + 60_000,
  });
  assert.deepEqual(nextDeliveryState({ statusCode: 503, retryAfterS: 0 }, 2, AT), { state: 'pending', step: 3, dueMs: NOW });
  // The schedule's end still ends it: a receiver cannot keep a delivery pending by asking for retries.
  assert.deepEqual(nextDeliveryState({ statusCode: 503, retryAfterS: 1 }, SCHEDULE.length, AT), { state: 'failed' });
});

test('a hook is disabled once its failures have gone on for five days, not a second before', () => {
  const at = new Date('2030-01-10T12:00:00Z');
  const since = (ms: number) => formatTimestamp(new Date(at.getTime() - ms));
  assert.equal(FAILING_DISABLE_MS, 5 * 24 * 3600 * 1000);
  assert.equal(failingTooLong(since(FAILING_DISABLE_MS), at), true);
  assert.equal(failingTooLong(since(FAILING_DISABLE_MS + 3600_000), at), true);
  assert.equal(failingTooLong(since(FAILING_DISABLE_MS - 1000), at), false);
  assert.equal(failingTooLong(since(0), at), false);
});

test('Retry-After is read as seconds or as an HTTP date, kept between 0 and a day, and ignored when unreadable', () => {
  const now = Date.parse('2030-01-10T12:00:00Z');
  assert.equal(retryAfterSeconds('120', now), 120);
  assert.equal(retryAfterSeconds(' 7 ', now), 7);
  assert.equal(retryAfterSeconds('Thu, 10 Jan 2030 12:01:30 GMT', now), 90);
  assert.equal(retryAfterSeconds('Thu, 10 Jan 2030 11:00:00 GMT', now), 0);
  assert.equal(retryAfterSeconds('999999', now), 24 * 3600);
  assert.equal(retryAfterSeconds('soon', now), undefined);
  assert.equal(retryAfterSeconds('', now), undefined);
  assert.equal(retryAfterSeconds(null, now), undefined);
});
