import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkPool, WorkRefused } from './work-pool.js';

/** A task that runs until the test ends it. */
function heldTask() {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  let started = false;
  return {
    run: async () => {
      started = true;
      await ended;
    },
    end,
    get started() {
      return started;
    },
  };
}

const refusal = (reason: WorkRefused['reason']) => (error: unknown) => error instanceof WorkRefused && error.reason === reason;

test('a work pool runs its limit at once, queues up to its bound in order and refuses one more at once', async () => {
  const pool = new WorkPool({ concurrency: 1, queue: 2, what: 'tests' });
  const [a, b, c] = [heldTask(), heldTask(), heldTask()];
  const running = [pool.run(a.run), pool.run(b.run), pool.run(c.run)];
  assert.deepEqual(pool.load, { running: 1, waiting: 2 });
  await assert.rejects(
    pool.run(async () => assert.fail('never runs')),
    refusal('full'),
  );
  a.end();
  await running[0];
  assert.ok(b.started && !c.started, 'in arrival order');
  b.end();
  c.end();
  await Promise.all(running);
  assert.deepEqual(pool.load, { running: 0, waiting: 0 });
});

test('a waiting task whose signal aborts leaves the queue without running; close refuses the queue and later work', async () => {
  const pool = new WorkPool({ concurrency: 1, queue: 5, what: 'tests' });
  const first = heldTask();
  const running = pool.run(first.run);
  const gone = new AbortController();
  const abandoned = heldTask();
  const leaving = pool.run(abandoned.run, gone.signal);
  const queued = heldTask();
  const closing = pool.run(queued.run);
  gone.abort();
  await assert.rejects(leaving, refusal('aborted'));
  assert.deepEqual(pool.load, { running: 1, waiting: 1 });

  pool.close();
  await assert.rejects(closing, refusal('closed'));
  await assert.rejects(
    pool.run(async () => {}),
    refusal('closed'),
  );
  let idle = false;
  const waitingForIdle = pool.idle().then(() => (idle = true));
  await Promise.resolve();
  assert.equal(idle, false, 'the running task still holds its slot');
  first.end();
  await running;
  await waitingForIdle;
  assert.ok(!abandoned.started && !queued.started);
});
