/**
 * A counting semaphore with a FIFO queue: bounds the calls running at once in one sandbox, so a
 * burst of calls waits its turn instead of forking without limit.
 */
export class Semaphore {
  private readonly waiting: Array<() => void> = [];
  private active = 0;

  constructor(private readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next !== undefined) next();
      else this.active--;
    }
  }

  get busy(): number {
    return this.active + this.waiting.length;
  }
}
