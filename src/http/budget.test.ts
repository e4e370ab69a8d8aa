import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { FastifyReply } from 'fastify';
import { withinBudget } from '../content/shared/envelope.js';
import { Budget } from './budget.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('requests within the budget start at once; beyond it they wait, first come first served', async () => {
  const budget = new Budget(1000);
  const a = await budget.take(600);
  const b = await budget.take(400);
  assert.deepEqual(budget.state, { used: 1000, waiting: 0 });

  const started: string[] = [];
  const startedAs = (name: string) => (give: () => void) => {
    started.push(name);
    return give;
  };
  const c = budget.take(500).then(startedAs('c'));
  const d = budget.take(10).then(startedAs('d'));
  await tick();
  assert.deepEqual(started, [], 'nothing is free');
  assert.deepEqual(budget.state, { used: 1000, waiting: 2 });

  b();
  await tick();
  assert.deepEqual(started, [], 'the 10 units do not overtake the 500 that wait before them');
  a();
  await tick();
  assert.deepEqual(started, ['c', 'd']);
  assert.deepEqual(budget.state, { used: 510, waiting: 0 });
  (await c)();
  (await d)();
  assert.deepEqual(budget.state, { used: 0, waiting: 0 });
});

test('giving back twice gives back once, and a request larger than the budget takes all of it', async () => {
  const budget = new Budget(100);
  const big = await budget.take(5000);
  assert.deepEqual(budget.state, { used: 100, waiting: 0 });
  let small = false;
  const waiting = budget.take(1).then((give) => {
    small = true;
    return give;
  });
  big();
  big();
  await tick();
  assert.equal(small, true);
  assert.deepEqual(budget.state, { used: 1, waiting: 0 });
  const give = await waiting;
  give();
  give();
  assert.deepEqual(budget.state, { used: 0, waiting: 0 });
});

test("a list's room is given back when its answer closes, or at once when the client has already gone", async () => {
  const budget = new Budget(1000);
  const reply = (destroyed: boolean) => ({ raw: Object.assign(new EventEmitter(), { destroyed }) }) as unknown as FastifyReply;

  const open = reply(false);
  assert.equal(await withinBudget(budget, open, 999, async () => budget.state.used), 999, 'the room is held while the list is read');
  assert.deepEqual(budget.state, { used: 999, waiting: 0 }, 'and until the answer is sent');
  open.raw.emit('close');
  assert.deepEqual(budget.state, { used: 0, waiting: 0 });

  await withinBudget(budget, reply(true), 200, async () => undefined);
  assert.deepEqual(budget.state, { used: 0, waiting: 0 }, 'nobody will read it: nothing is held');

  const failing = reply(false);
  await assert.rejects(
    withinBudget(budget, failing, 500, async () => {
      throw new Error('database gone');
    }),
  );
  failing.raw.emit('close');
  assert.deepEqual(budget.state, { used: 0, waiting: 0 }, 'the error answer closes too');
});
