/** At most `slots` pieces of work at once; the rest wait in order. */
export class WorkLimit {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly slots: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.slots) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await work();
    } finally {
      // hand the slot straight to the next in line, or give it back
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
