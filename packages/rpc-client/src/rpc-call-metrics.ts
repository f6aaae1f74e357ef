import {
  DatabaseUnavailable,
  isBmaasError,
  NoValidHost,
  RpcTimeout,
  secondsSince,
  TemporaryFailure,
} from '@bmaas/common';
import { Histogram, type Registry } from 'prom-client';
import type { RpcMethodName } from './methods.js';

/**
 * How a JSON-RPC call ended: `ok`; `refused` (a domain error of the
 * caller's making: locked, bad state, not found); `unavailable` (no
 * conductor, conductor stopping, database down); `timeout`; `error` (any
 * other fault).
 */
export type RpcCallOutcome = 'ok' | 'refused' | 'unavailable' | 'timeout' | 'error';

export function rpcOutcomeOf(error: unknown): Exclude<RpcCallOutcome, 'ok'> {
  if (error instanceof RpcTimeout) return 'timeout';
  if (error instanceof TemporaryFailure || error instanceof DatabaseUnavailable || error instanceof NoValidHost) {
    return 'unavailable';
  }
  if (isBmaasError(error) && error.status < 500) return 'refused';
  return 'error';
}

/** Buckets of RPC latencies (seconds): quick reads in milliseconds, provisioning calls in seconds. */
const RPC_SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * JSON-RPC calls by method and outcome with their latency, on one side of
 * the wire: `client` (the API calling conductors,
 * `bmaas_rpc_client_call_duration_seconds`) or `server` (a conductor
 * answering, `bmaas_rpc_server_call_duration_seconds`). The histogram's
 * `_count` is the number of calls. Methods are the shared table's names.
 */
export class RpcCallMetrics {
  private readonly durations: Histogram<'method' | 'outcome'>;
  /**
   * Children bound per method and outcome, so recording builds no label
   * object. Maps, not objects keyed by name: lookups by many names in
   * objects went megamorphic in a process that had made many kinds of calls.
   */
  private readonly bound = new Map<string, Map<RpcCallOutcome, Histogram.Internal<'method' | 'outcome'>>>();

  constructor(registry: Registry, side: 'client' | 'server') {
    this.durations = new Histogram({
      name: `bmaas_rpc_${side}_call_duration_seconds`,
      help:
        side === 'client'
          ? 'JSON-RPC calls from this process to conductors, by method and outcome (ok, refused, unavailable, timeout, error): time to the answer.'
          : 'JSON-RPC calls this conductor answered, by method and outcome (ok, refused, unavailable, timeout, error): time to the answer.',
      labelNames: ['method', 'outcome'] as const,
      buckets: RPC_SECONDS_BUCKETS,
      registers: [registry],
    });
  }

  /** One call that ended with `error` (undefined when it succeeded), started at `started` (performance.now()). */
  observe(method: RpcMethodName, error: unknown, started: number): void {
    const outcome = error === undefined ? 'ok' : rpcOutcomeOf(error);
    let byOutcome = this.bound.get(method);
    if (byOutcome === undefined) {
      byOutcome = new Map();
      this.bound.set(method, byOutcome);
    }
    let child = byOutcome.get(outcome);
    if (child === undefined) {
      child = this.durations.labels(method, outcome);
      byOutcome.set(outcome, child);
    }
    child.observe(secondsSince(started));
  }
}
