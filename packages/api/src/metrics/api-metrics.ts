import { Counter, Histogram, type Registry } from 'prom-client';
import { BOOT_REFUSALS } from '../boot/boot-config-controller.js';
import type { BootRequestEvent, BootRequestObserver } from '../boot/boot-request-observer.js';

type BootOutcome = BootRequestEvent['outcome'];

const BOOT_OUTCOMES: readonly BootOutcome[] = ['served', ...BOOT_REFUSALS, 'server-error'];
/** The label of every config name not (yet) served. */
const OTHER = 'other';
/**
 * Most config names counted under their own name. Only a name a conductor's
 * boot interface served enters (each serves a few), so this only guards
 * against a bug: past it, new names count as other.
 */
export const MAX_BOOT_CONFIG_NAMES = 32;

/** Latency buckets of answers that touch the database and a conductor (seconds). */
export const REQUEST_SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Counter and histogram children by label values, bound once so that recording allocates no label object. */
type Children<T> = Record<string, T>;

/** HTTP status of each boot outcome: what the requester saw. */
function statusOf(outcome: BootOutcome): '200' | '404' | '500' {
  if (outcome === 'served') return '200';
  return outcome === 'server-error' ? '500' : '404';
}

/**
 * What the API records: boot configuration requests (an observer of the
 * boot handler) and REST requests. Labels are bounded: outcome, config
 * name, HTTP method, express route template and status code; never a MAC, a
 * node or a raw path. Config names are chosen by requesters, so a name is
 * counted under its own label only once a conductor served it (the boot
 * interfaces enabled on the conductors name them, the API knows none of its
 * own); before that, and for every other name, it is `other`.
 */
export class ApiMetrics implements BootRequestObserver {
  private readonly bootRequests: Children<Children<Counter.Internal>> = {};
  private readonly requests: Counter<'outcome' | 'name'>;
  private readonly bootDurations: Children<Histogram.Internal<'status'>> = {};
  private readonly restDurations: Histogram<'method' | 'route' | 'status_code'>;

  /** @param registry the process's registry, served at /metrics. */
  constructor(readonly registry: Registry) {
    this.requests = new Counter({
      name: 'bmaas_boot_config_requests_total',
      help: 'Boot configuration requests (GET /v1/boot/<MAC>/<NAME>) answered, by outcome (served or the refusal reason) and config name (names a conductor has served, else other).',
      labelNames: ['outcome', 'name'] as const,
      registers: [registry],
    });
    const durations = new Histogram({
      name: 'bmaas_boot_config_request_duration_seconds',
      help: 'Time to answer a boot configuration request, by HTTP status (200 served, 404 refused, 500 failed).',
      labelNames: ['status'] as const,
      buckets: REQUEST_SECONDS_BUCKETS,
      registers: [registry],
    });
    this.restDurations = new Histogram({
      name: 'bmaas_http_request_duration_seconds',
      help: 'Time to answer a REST API request (all but /v1/boot), by method, express route template (unmatched when no route matched) and status code.',
      labelNames: ['method', 'route', 'status_code'] as const,
      buckets: REQUEST_SECONDS_BUCKETS,
      registers: [registry],
    });
    for (const outcome of BOOT_OUTCOMES) this.bootRequests[outcome] = {};
    this.addName(OTHER);
    for (const status of ['200', '404', '500']) {
      this.bootDurations[status] = durations.labels(status);
      durations.zero({ status });
    }
  }

  /** One answered boot configuration request (the boot handler calls this after answering). */
  observe(event: BootRequestEvent): void {
    const { name } = event;
    if (
      event.outcome === 'served' &&
      name !== undefined &&
      !this.knows(name) &&
      this.nameCount < MAX_BOOT_CONFIG_NAMES
    ) {
      this.addName(name);
    }
    const bucket = name !== undefined && this.knows(name) ? name : OTHER;
    this.bootRequests[event.outcome]?.[bucket]?.inc();
    this.bootDurations[statusOf(event.outcome)]?.observe(event.durationSeconds);
  }

  private nameCount = 0;

  private knows(name: string): boolean {
    return Object.hasOwn(this.bootRequests.served as object, name);
  }

  /** Every outcome's series of the name, at 0: rate() and alerts see 0, not absence, before the first refusal. */
  private addName(name: string): void {
    for (const outcome of BOOT_OUTCOMES) {
      const child = this.requests.labels(outcome, name);
      child.inc(0);
      (this.bootRequests[outcome] as Children<Counter.Internal>)[name] = child;
    }
    this.nameCount++;
  }

  /** One answered REST request; `route` is the matched route template, or `unmatched`. */
  observeRestRequest(method: string, route: string, statusCode: number, seconds: number): void {
    this.restDurations.observe({ method, route, status_code: statusCode }, seconds);
  }
}
