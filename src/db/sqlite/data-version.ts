import type { RemoteChanges } from '../change-source.js';

/**
 * SQLite: other connections' commits (the CLI's processes), by `pragma data_version`, asked once
 * per tick of the event loop that asks whether changes are heard. A request sent after another
 * process's commit returned arrives after it, so the tick that handles the request, and its first
 * question, come after the commit too: that question sees it. Asking on every use would cost most
 * of what a cache saves (the pragma takes about as long as reading the credential); once a tick,
 * which carries many requests under load, costs little.
 */
export function sqliteRemoteChanges(dataVersion: () => number, changed: () => void): RemoteChanges {
  let seen = dataVersion();
  let askedThisTick = false;
  const nextTick = () => {
    askedThisTick = false;
  };
  return {
    fresh() {
      if (!askedThisTick) {
        askedThisTick = true;
        setImmediate(nextTick);
        const version = dataVersion();
        if (version !== seen) {
          seen = version;
          changed();
        }
      }
      return true;
    },
    close: async () => {},
  };
}
