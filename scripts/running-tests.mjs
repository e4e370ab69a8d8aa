// A node:test reporter that reports nothing itself: it keeps the tests that have started and not
// yet finished (test:dequeue to test:complete, which arrive as they happen, from every file's
// process) in the JSON file named by CMS_TEST_RUNNING_FILE, so that scripts/test.mjs can say which
// tests were still running, and for how long, when a suite runs out of time. When the run ends it
// also writes how long each file's tests took (`<that file>.times`: file → milliseconds, the sum
// of its top-level tests), from which scripts/test.mjs balances the next run's shards.
import { writeFileSync } from 'node:fs';

export default async function* runningTests(source) {
  const file = process.env.CMS_TEST_RUNNING_FILE;
  /** key → start times (ms); the key is the file, the nesting and the name. */
  const running = new Map();
  /** file → milliseconds its top-level tests took. */
  const took = {};
  const key = (data) => JSON.stringify([data.file ?? '', data.nesting, data.name]);
  for await (const event of source) {
    if (event.type === 'test:dequeue') {
      const k = key(event.data);
      running.set(k, [...(running.get(k) ?? []), Date.now()]);
    } else if (event.type === 'test:complete') {
      const { file: testFile, nesting, details } = event.data;
      if (testFile && nesting === 0) took[testFile] = (took[testFile] ?? 0) + (details?.duration_ms ?? 0);
      const k = key(event.data);
      const starts = running.get(k)?.slice(1) ?? [];
      if (starts.length) running.set(k, starts);
      else running.delete(k);
    } else continue;
    if (file) {
      const list = [...running].flatMap(([k, starts]) => {
        const [testFile, nesting, name] = JSON.parse(k);
        return starts.map((since) => ({ file: testFile, nesting, name, since }));
      });
      writeFileSync(file, JSON.stringify(list));
    }
  }
  if (file) writeFileSync(`${file}.times`, JSON.stringify(took));
  yield '';
}
