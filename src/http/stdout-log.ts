import pino from 'pino';

/**
 * Log bytes kept for a stdout reader that has fallen behind. Past it new lines are dropped
 * (and counted) rather than kept: a reader that stops must not grow the process without end.
 */
const BUFFER_BYTES = 2 * 1024 * 1024;

interface StdoutLog {
  /** Where the logger writes: stdout, without ever waiting for it. */
  readonly stream: pino.DestinationStream;
  /** `report(count)` runs each time the reader has caught up after lines were dropped. */
  onCaughtUp(report: (dropped: number) => void): void;
  /** Resolves once every kept line is written, or after `ms`, whichever comes first. */
  settle(ms: number): Promise<void>;
}

/**
 * The server process's log destination. pino's default writes to stdout synchronously: when the
 * pipe is full and nobody reads it, every log call (and the flush at exit) waits for good, so
 * neither requests nor SIGTERM are ever served again. Here lines wait in a bounded buffer and go
 * out as the reader takes them.
 */
export function stdoutLog(): StdoutLog {
  // Opening process.stdout makes libuv switch a pipe to non-blocking mode. On a blocking pipe
  // the asynchronous write would still hang a thread-pool thread, and the exit flush the process.
  void process.stdout;
  const sonic = pino.destination({ dest: 1, sync: false, maxLength: BUFFER_BYTES });
  let dropped = 0;
  let waiting = 0;
  sonic.on('drop', () => dropped++);
  sonic.on('write', (n: number) => {
    waiting = Math.max(0, waiting - n);
  });

  // pino flushes this stream synchronously on process exit, retrying while the pipe is full. At
  // exit we write what the pipe takes at once and give up the rest: the shutdown has already
  // waited (boundedly) in settle().
  const flushSync = sonic.flushSync.bind(sonic);
  sonic.flushSync = () => {
    (sonic as { retryEAGAIN?: () => boolean }).retryEAGAIN = () => false;
    try {
      flushSync();
    } catch {
      // Whatever the reader did not take is lost, as dropped lines are.
    }
  };

  return {
    stream: {
      write(line: string) {
        const before = dropped;
        sonic.write(line);
        if (dropped === before) waiting += Buffer.byteLength(line);
      },
    },
    onCaughtUp(report) {
      // sonic-boom emits 'drain' once its buffer is empty: everything kept has been written.
      sonic.on('drain', () => {
        if (dropped === 0) return;
        const count = dropped;
        dropped = 0;
        report(count);
      });
    },
    settle(ms) {
      if (waiting === 0) return Promise.resolve();
      return new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        sonic.once('drain', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
