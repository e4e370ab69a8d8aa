import { ServiceUnavailableError } from '../errors.js';

/** Seconds a client refused by a full queue or a shutdown is asked to wait before trying again. */
const BUSY_RETRY_AFTER_SECONDS = 5;

/** Why a task never started: its queue was full, its client went away, or the pool is closing. */
export class WorkRefused extends ServiceUnavailableError {
  constructor(
    readonly reason: 'full' | 'aborted' | 'closed' | 'timeout',
    detail: string,
  ) {
    super(detail, BUSY_RETRY_AFTER_SECONDS);
  }
}

interface Waiting {
  readonly start: () => void;
  readonly refuse: (error: WorkRefused) => void;
}

interface WorkPoolOptions {
  /** Tasks running at once. */
  readonly concurrency: number;
  /** Tasks waiting for a slot at most; one more is refused at once. Infinity: no bound. */
  readonly queue: number;
  /** What the work is, for the refusals' details ("images made on request"). */
  readonly what: string;
}

/**
 * At most `concurrency` tasks at once, the others waiting in arrival order in a bounded queue. A
 * waiting task holds nothing but its place: one whose signal aborts (its client went away) leaves
 * the queue without running, and close() empties the queue, so a shutdown waits only for the tasks
 * already running.
 */
export class WorkPool {
  private active = 0;
  private readonly waiting: Waiting[] = [];
  private closed = false;
  private readonly onIdle: (() => void)[] = [];

  constructor(private readonly options: WorkPoolOptions) {}

  /** Tasks running and waiting, for tests and measurement. */
  get load(): { running: number; waiting: number } {
    return { running: this.active, waiting: this.waiting.length };
  }

  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.slot(signal);
    try {
      // The client may have gone in the same tick its turn came.
      if (signal?.aborted) throw this.aborted();
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next.start();
      else if (--this.active === 0) for (const resolve of this.onIdle.splice(0)) resolve();
    }
  }

  /** Resolves once no task is running (at once if none is). */
  idle(): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => this.onIdle.push(resolve));
  }

  /** Refuses every waiting task and every later one; running tasks finish. */
  close(): void {
    this.closed = true;
    for (const each of this.waiting.splice(0)) each.refuse(this.shutDown());
  }

  private slot(signal: AbortSignal | undefined): Promise<void> {
    if (this.closed) return Promise.reject(this.shutDown());
    if (signal?.aborted) return Promise.reject(this.aborted());
    if (this.active < this.options.concurrency) {
      this.active++;
      return Promise.resolve();
    }
    if (this.waiting.length >= this.options.queue) {
      return Promise.reject(
        new WorkRefused('full', `Too many ${this.options.what} are waiting already; try again in ${BUSY_RETRY_AFTER_SECONDS} seconds.`),
      );
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiting.indexOf(entry);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(this.aborted());
      };
      const entry: Waiting = {
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        refuse: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      this.waiting.push(entry);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private aborted(): WorkRefused {
    return new WorkRefused('aborted', 'The request was closed before its image work started.');
  }

  private shutDown(): WorkRefused {
    return new WorkRefused('closed', `The service is shutting down; ${this.options.what} are not started now. Try again shortly.`);
  }
}
