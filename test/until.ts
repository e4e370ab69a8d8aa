import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * What `check` answers once it answers something (not false or undefined), asked every 20 ms; the
 * test fails, naming `what`, when it has not after `ms`. For what another part (a worker, a
 * receiver) does in its own time.
 */
export async function until<T>(what: string, check: () => Promise<T | undefined | false>, ms = 10_000): Promise<T> {
  // performance.now(), which mock.timers leaves alone: a test that mocks Date still fails on a hang.
  const deadline = performance.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (performance.now() > deadline) assert.fail(`${what} within ${ms} ms`);
    await sleep(20); // the interval of the poll, not a wait for the event
  }
}
