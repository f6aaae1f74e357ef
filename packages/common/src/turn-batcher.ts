export interface TurnBatcherOptions {
  /** A batch this large is sent at once. */
  maxBatch?: number;
  /**
   * Batches out at the same time; more requests wait for one to come back
   * and then go together. Under load this makes batches bigger (fewer
   * messages) instead of more; alone, a request still goes at once.
   */
  maxInFlight?: number;
}

/**
 * Coalesces the requests made during one turn of the event loop into one
 * call of `load`. The batch is sent with setImmediate, after the turn's I/O
 * callbacks: under load many requests arrive in the same turn, and one
 * database query or one RPC message for all of them costs far less CPU than
 * one each (on two cores, every message between processes is a wake-up).
 * A lone request waits no longer than the rest of its turn.
 */
export class TurnBatcher<K, V> {
  private pending: Array<{ key: K; resolve: (value: V) => void; reject: (error: unknown) => void }> = [];
  private scheduled = false;
  private inFlight = 0;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;

  /**
   * `load` answers the keys in order (one value per key); when it throws,
   * every request of the batch fails with that error.
   */
  constructor(
    private readonly load: (keys: K[]) => Promise<V[]>,
    options: TurnBatcherOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 64;
    this.maxInFlight = options.maxInFlight ?? Number.POSITIVE_INFINITY;
  }

  get(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      this.pending.push({ key, resolve, reject });
      if (this.pending.length >= this.maxBatch) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          if (this.inFlight < this.maxInFlight) this.flush();
        });
      }
    });
  }

  private flush(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    this.inFlight++;
    this.load(batch.map((request) => request.key))
      .then(
        (values) => {
          if (values.length !== batch.length) {
            const error = new Error(`batch loader answered ${values.length} values for ${batch.length} keys`);
            for (const request of batch) request.reject(error);
            return;
          }
          for (const [i, request] of batch.entries()) request.resolve(values[i] as V);
        },
        (error: unknown) => {
          for (const request of batch) request.reject(error);
        },
      )
      .finally(() => {
        this.inFlight--;
        // What waited for this batch goes now, unless its own turn is still to come.
        if (!this.scheduled && this.inFlight < this.maxInFlight) this.flush();
      });
  }
}
