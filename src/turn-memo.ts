/**
 * `compute` remembered for the rest of the current turn of the event loop: asked again for the
 * same key in the same turn, it answers from memory; the memory is forgotten when the turn ends
 * (`setImmediate`). For a pure function that costs more than a Map lookup and is asked many times
 * a turn under load: the SHA-256 of the credentials a request sends, which key the credential keep
 * (credential-keep.ts). Under load one turn handles many requests, most with the same credentials
 * (bench/README.md has the figures).
 *
 * What is remembered lives no longer than the requests of that turn, which hold the same strings
 * in their headers: unlike a keep keyed by the credentials themselves, a heap snapshot taken
 * between turns holds none of them. At most `limit` keys a turn; past that it computes every time.
 */
export function perTurn<V>(compute: (key: string) => V, limit = 1024): (key: string) => V {
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
