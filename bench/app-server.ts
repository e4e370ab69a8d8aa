/**
 * The real app as production runs it (buildApp + listen), in a child process of a bench so its RSS
 * and event loop are its own. Configured by the environment like the service (DATA_DIR,
 * LOG_LEVEL=silent…); listens on 127.0.0.1 on a free port and reports it over IPC. A message (but
 * 'gc') or the parent going away closes it cleanly, which also lets --cpu-prof write its profile.
 */
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createDatabase } from '../src/db/database.js';

const config = loadConfig(process.env);
const db = createDatabase(config.databaseUrl, {
  synchronous: config.sqliteSynchronous,
  mmapMB: config.sqliteMmapMB,
});
const app = await buildApp({ config, db });
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
process.send?.({ port: typeof address === 'object' && address ? address.port : 0 });

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await app.close();
  await db.close();
  process.exit(0);
}
// 'gc' asks for a full collection (the soak, run with --expose-gc) and is answered once it is done;
// any other message stops the server. The collection is V8's last-resort one, which also gives
// back the pages a regular one keeps for reuse: what is left is what the process holds. After a
// regular one, RssAnon read 96 → 138 MB over 150 s of the soak's load with the V8 heap in use flat
// (37.5 → 35 MB); after this one 69 → 67 MB (bench/README.md, 2026-11-26 afternoon).
process.on('message', (message) => {
  if (message !== 'gc') return void stop();
  (globalThis as { gc?: (options: object) => void }).gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  process.send?.({ collected: true });
});
process.on('disconnect', stop);
