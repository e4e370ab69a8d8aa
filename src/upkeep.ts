/** How often each node runs its upkeep: a run that finds nothing to remove removes nothing. */
export const UPKEEP_EVERY_MS = 60 * 60 * 1000;

/**
 * When a node first runs its upkeep after it starts: between one and five minutes, at random.
 * Not at once, so that a fleet restarted together does not run it together while it warms up;
 * not after the first interval, so that a node restarted more often than hourly still runs it.
 */
function firstUpkeepDelayMs(): number {
  return 60_000 + Math.random() * 4 * 60_000;
}

/** One part of the upkeep, owned by the feature whose rows it removes. */
export interface UpkeepTask {
  /** What it does, for the log: "removing old change history". */
  readonly name: string;
  /** Runs it once; resolves to how many of each thing it removed (logged when any were). */
  readonly run: () => Promise<Readonly<Record<string, number>>>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** This node's upkeep (app.ts lists its tasks). */
    upkeep: Upkeep;
  }
}

interface UpkeepLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/**
 * Each node's upkeep: the removal of what has outlived its use (expired tokens and codes, old
 * change history, old webhook deliveries), on one schedule (firstUpkeepDelayMs, then every
 * UPKEEP_EVERY_MS from the end of the run before). Every node runs it: each task removes by a
 * rule on the rows (their age), so two nodes running it together remove the same rows once, and
 * a fleet needs no elected node. The tasks run one after the other, and a task that fails is
 * logged and does not stop the others; it runs again at the next run.
 */
export class Upkeep {
  readonly #tasks: readonly UpkeepTask[];
  readonly #log: UpkeepLog;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(tasks: readonly UpkeepTask[], log: UpkeepLog) {
    this.#tasks = tasks;
    this.#log = log;
  }

  start(): void {
    this.#schedule(firstUpkeepDelayMs());
  }

  /** Runs every task once, now. */
  async run(): Promise<void> {
    for (const task of this.#tasks) {
      try {
        const removed = await task.run();
        if (Object.values(removed).some((count) => count > 0)) this.#log.info({ removed }, task.name);
      } catch (err) {
        this.#log.warn({ err }, `${task.name} failed; it runs again with the next upkeep`);
      }
    }
  }

  /** No run after this; resolves once a run under way has ended (the database may then be closed). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(delay: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.run().finally(() => {
        this.#running = undefined;
        this.#schedule(UPKEEP_EVERY_MS);
      });
    }, delay);
    this.#timer.unref();
  }
}
