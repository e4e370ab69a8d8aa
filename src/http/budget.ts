/**
 * A weighted budget shared by a process's requests: a request takes as many units as it will hold
 * in memory and gives them back when its answer has been sent. Lists use it so that 32 clients
 * asking for 999 records each do not hold 32 bodies of 3 MB at once: past
 * the budget a request waits its turn instead. It bounds this process only, which is all it
 * needs to bound: memory is per process.
 */
export class Budget {
  private used = 0;
  private readonly waiting: Array<{ units: number; start: () => void }> = [];

  constructor(readonly capacity: number) {}

  /**
   * Resolves once `units` are free (at once if they are), with the function that gives them back;
   * calling it again does nothing. A request larger than the whole budget takes all of it.
   */
  take(units: number): Promise<() => void> {
    const wanted = Math.min(units, this.capacity);
    return new Promise((resolve) => {
      const start = () => {
        this.used += wanted;
        let given = false;
        resolve(() => {
          if (given) return;
          given = true;
          this.used -= wanted;
          this.next();
        });
      };
      // First come, first served: a small request does not overtake a large one that waits.
      if (this.waiting.length === 0 && this.used + wanted <= this.capacity) start();
      else this.waiting.push({ units: wanted, start });
    });
  }

  /** Units in use and requests waiting, for tests and logs. */
  get state(): { used: number; waiting: number } {
    return { used: this.used, waiting: this.waiting.length };
  }

  private next(): void {
    while (this.waiting.length > 0 && this.used + this.waiting[0]!.units <= this.capacity) {
      this.waiting.shift()!.start();
    }
  }
}
