/**
 * The source files one request runs code in, found by V8's precise coverage: the counts of every
 * function before and after the request, and the files whose counts changed. docs/architecture.md
 * walks GET /api/page/:id from this list; request-walk.test.ts keeps it short.
 */
import inspector from 'node:inspector/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

type Counts = Map<string, number>;

async function counts(session: inspector.Session): Promise<Counts> {
  const { result } = await session.post('Profiler.takePreciseCoverage');
  const found: Counts = new Map();
  for (const script of result) {
    if (!script.url.startsWith('file:') || script.url.includes('/node_modules/')) continue;
    let total = 0;
    for (const fn of script.functions) total += fn.ranges[0]?.count ?? 0;
    found.set(script.url, total);
  }
  return found;
}

/** The project's source files (as `src/…`) whose functions ran while `run` did. */
export async function filesRunBy(run: () => Promise<unknown>): Promise<string[]> {
  const session = new inspector.Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
  try {
    const before = await counts(session);
    await run();
    const after = await counts(session);
    const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
    return [...after]
      .filter(([url, n]) => n !== (before.get(url) ?? 0))
      .map(([url]) => path.relative(root, fileURLToPath(url)).replace(/\.js$/, '.ts'))
      .filter((file) => file.startsWith('src/'))
      .sort();
  } finally {
    await session.post('Profiler.stopPreciseCoverage');
    session.disconnect();
  }
}
