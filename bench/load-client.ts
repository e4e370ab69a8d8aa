/**
 * autocannon in a process of its own (harness.ts, `load` with `client: 'process'`): the client's
 * event loop then shares nothing with the runner's. Told its load over IPC (the server's URL,
 * connections, seconds, headers and the GET paths to draw from at random), it answers with
 * autocannon's figures and exits.
 */
import autocannon from 'autocannon';

interface Told {
  url: string;
  connections: number;
  seconds: number;
  headers: Record<string, string>;
  paths: string[];
}

process.once('message', async (message) => {
  const told = message as Told;
  const result = await autocannon({
    url: told.url,
    connections: told.connections,
    duration: told.seconds,
    timeout: 30,
    headers: told.headers,
    requests: [
      { method: 'GET', setupRequest: (request) => ({ ...request, path: told.paths[Math.floor(Math.random() * told.paths.length)]! }) },
    ],
  });
  process.send?.(
    {
      reqPerSec: result.requests.average,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      requests: result.requests.total,
      non2xx: result.non2xx,
      errors: result.errors,
    },
    () => process.exit(0),
  );
});
