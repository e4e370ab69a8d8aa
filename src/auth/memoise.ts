/**
 * `compute` memoised for the rest of the current tick of the event loop: asked again for the same
 * key in the same tick, it answers from memory; the memory is forgotten when the tick ends
 * (`setImmediate`). For a pure function that costs more than a Map lookup and is asked many times
 * a tick under load: the SHA-256 of the credentials a request sends, which key the principal
 * cache. Under load one tick handles many requests, most with the same credentials.
 *
 * What is remembered lives no longer than the requests of that tick, which hold the same strings
 * in their headers: unlike a cache keyed by the credentials themselves, a heap snapshot taken
 * between ticks holds none of them. At most `limit` keys a tick; past that it computes every time.
 */
export function memoisePerTick<V>(compute: (key: string) => V, limit = 1024): (key: string) => V {
  let memo: Map<string, V> | undefined;
  const forget = () => {
    memo = undefined;
  };
  return (key) => {
    if (!memo) {
      memo = new Map();
      setImmediate(forget);
    }
    let value = memo.get(key);
    if (value === undefined) {
      value = compute(key);
      if (memo.size < limit) memo.set(key, value);
    }
    return value;
  };
}
