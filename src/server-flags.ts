/**
 * The Node.js flags the server runs with: `npm start`, the command in docs/deploy.md and README.md,
 * and the bench's app (src/server-flags.test.ts checks that they agree). V8 cannot change these
 * once the process runs, so they are on the command line (or in NODE_OPTIONS).
 *
 * `--max-semi-space-size=8`: V8 lets the young generation grow to 32 MB a semi-space on this
 * machine when the process allocates fast, as it does under load, and the process's own memory
 * (RssAnon) follows. At 8 MB, under 32 connections, GET by id peaked at 118 MB instead of 188 and
 * lists of 200 at 147 MB instead of 298, with the same or better throughput (0.93× and 2.06× of
 * the ceiling against 0.82× and 1.94×): the shorter scavenges cost less than the extra ones
 * (bench/README.md).
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];
