import { Counter, Histogram, type Registry } from 'prom-client';
import { BOOT_REFUSALS } from '../boot/boot-config-controller.js';
import type { BootRequestEvent, BootRequestObserver } from '../boot/boot-request-observer.js';

/** Config names counted under their own name; any other is `other` (names are chosen by requesters). */
export const KNOWN_BOOT_CONFIG_NAMES = ['boot.ipxe', 'grub.cfg', 'discovery.ipxe'] as const;

type NameBucket = (typeof KNOWN_BOOT_CONFIG_NAMES)[number] | 'other';
type BootOutcome = BootRequestEvent['outcome'];

const BOOT_OUTCOMES: readonly BootOutcome[] = ['served', ...BOOT_REFUSALS, 'server-error'];
const NAME_BUCKETS: readonly NameBucket[] = [...KNOWN_BOOT_CONFIG_NAMES, 'other'];

/** Latency buckets of answers that touch the database and a conductor (seconds). */
export const REQUEST_SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Counter and histogram children by label values, bound once so that recording allocates no label object. */
type Children<T> = Record<string, T>;

function nameBucket(name: string | undefined): NameBucket {
  switch (name) {
    case 'boot.ipxe':
    case 'grub.cfg':
    case 'discovery.ipxe':
      return name;
    default:
      return 'other';
  }
}

/** HTTP status of each boot outcome: what the requester saw. */
function statusOf(outcome: BootOutcome): '200' | '404' | '500' {
  if (outcome === 'served') return '200';
  return outcome === 'server-error' ? '500' : '404';
}

/**
 * What the API records: boot configuration requests (an observer of the
 * boot handler) and REST requests. Labels are bounded: outcome, known
 * config names, HTTP method, express route template and status code; never
 * a MAC, a node or a raw path.
 */
export class ApiMetrics implements BootRequestObserver {
  private readonly bootRequests: Children<Children<Counter.Internal>> = {};
  private readonly bootDurations: Children<Histogram.Internal<'status'>> = {};
  private readonly restDurations: Histogram<'method' | 'route' | 'status_code'>;

  /** @param registry the process's registry, served at /metrics. */
  constructor(readonly registry: Registry) {
    const requests = new Counter({
      name: 'bmaas_boot_config_requests_total',
      help: 'Boot configuration requests (GET /v1/boot/<MAC>/<NAME>) answered, by outcome (served or the refusal reason) and config name (known names, else other).',
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
    for (const outcome of BOOT_OUTCOMES) {
      const byName: Children<Counter.Internal> = {};
      for (const name of NAME_BUCKETS) {
        byName[name] = requests.labels(outcome, name);
        // Every series exists from the start: rate() and alerts see 0, not absence, before the first refusal.
        byName[name].inc(0);
      }
      this.bootRequests[outcome] = byName;
    }
    for (const status of ['200', '404', '500']) {
      this.bootDurations[status] = durations.labels(status);
      durations.zero({ status });
    }
  }

  /** One answered boot configuration request (the boot handler calls this after answering). */
  observe(event: BootRequestEvent): void {
    this.bootRequests[event.outcome]?.[nameBucket(event.name)]?.inc();
    this.bootDurations[statusOf(event.outcome)]?.observe(event.durationSeconds);
  }

  /** One answered REST request; `route` is the matched route template, or `unmatched`. */
  observeRestRequest(method: string, route: string, statusCode: number, seconds: number): void {
    this.restDurations.observe({ method, route, status_code: statusCode }, seconds);
  }
}
