/**
 * A value that is here now, or a promise of it. The paths every request takes (authentication, its
 * rate-limit count) answer at once when what they need is already in memory, and go through a
 * promise only when they must wait: each async step skipped is a promise and a microtask fewer on
 * every request (bench/README.md).
 */
export type MaybePromise<T> = T | Promise<T>;

/** `next` applied to `value`: at once when the value is here, once it has come when it is a promise. */
export function andThen<T, R>(value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}
