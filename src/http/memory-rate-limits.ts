import type { RateLimitStore } from './rate-limit.js';

/**
 * Counters of this process alone: for limits checked on every request, where a database write
 * each time would cost more than the limit saves. Lapsed windows are dropped once per window.
 */
export function memoryRateLimits(): RateLimitStore {
  const windows = new Map<string, { count: number; endsAt: number }>();
  let sweepAt = 0;
  return {
    hit(key, windowSeconds) {
      const now = Date.now();
      if (now >= sweepAt) {
        for (const [k, w] of windows) if (w.endsAt <= now) windows.delete(k);
        sweepAt = now + windowSeconds * 1000;
      }
      let window = windows.get(key);
      if (!window || window.endsAt <= now) {
        window = { count: 0, endsAt: now + windowSeconds * 1000 };
        windows.set(key, window);
      }
      window.count += 1;
      return { count: window.count, retryAfter: Math.max(1, Math.ceil((window.endsAt - now) / 1000)) };
    },
    async takeBack(key) {
      const window = windows.get(key);
      if (window && window.endsAt > Date.now() && window.count > 0) window.count -= 1;
    },
    async reset(key) {
      windows.delete(key);
    },
    async close() {
      windows.clear();
    },
  };
}
