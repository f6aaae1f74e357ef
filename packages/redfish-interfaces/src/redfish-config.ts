import type { SectionValues } from '@bmaas/common';

/** The `[redfish]` section, owned by the redfish interfaces (names as in Ironic where Ironic has them). */
export const REDFISH_OPTIONS = {
  auth_type: {
    doc: 'How to authenticate to a BMC when driver_info.redfish_auth_type is unset: "basic" (HTTP basic on every request), "session" (a Redfish session, X-Auth-Token) or "auto" (a session where the service offers one, else basic).',
    format: ['basic', 'session', 'auto'],
    default: 'auto',
    env: 'BMAAS_REDFISH__AUTH_TYPE',
  },
  connection_attempts: {
    doc: 'Attempts of one request that got no answer, a connection error or a 5xx answer, before it fails (BMCs restart their web servers and answer 503 while busy).',
    format: 'positive-int',
    default: 5,
    env: 'BMAAS_REDFISH__CONNECTION_ATTEMPTS',
  },
  connection_retry_interval: {
    doc: 'Seconds between two attempts of one request.',
    format: Number,
    default: 4,
    env: 'BMAAS_REDFISH__CONNECTION_RETRY_INTERVAL',
  },
  request_timeout: {
    doc: 'Seconds one request may take, connection to last byte (BMCs answer GETs in 1-2 s, with outliers of 20 s).',
    format: 'positive-number',
    default: 60,
    env: 'BMAAS_REDFISH__REQUEST_TIMEOUT',
  },
  max_concurrent_requests: {
    doc: 'Requests in flight to one BMC at a time; the others wait their turn (BMCs are fragile under parallel load).',
    format: 'positive-int',
    default: 1,
    env: 'BMAAS_REDFISH__MAX_CONCURRENT_REQUESTS',
  },
  bios_apply_timeout: {
    doc: 'Seconds a BIOS clean or service step waits, after the reboot that applies pending settings, for the BMC to show them applied.',
    format: 'positive-number',
    default: 300,
    env: 'BMAAS_REDFISH__BIOS_APPLY_TIMEOUT',
  },
  kernel_append_params: {
    doc: "Kernel command-line parameters of the ramdisks the redfish boot interfaces boot (the ISOs of redfish-virtual-media, the images of redfish-https), when driver_info.kernel_append_params is unset; unset = [pxe]kernel_append_params, as Ironic's per-interface options fall back to [pxe].",
    format: 'optional-string',
    default: null as string | null,
    env: 'BMAAS_REDFISH__KERNEL_APPEND_PARAMS',
  },
} satisfies Record<string, { doc: string; format: unknown; default: unknown; env: string }>;

export type RedfishSettings = SectionValues<typeof REDFISH_OPTIONS>;

/** The section every redfish descriptor declares (one schema object: the registry accepts it more than once). */
export const REDFISH_SECTION = {
  section: 'redfish',
  options: REDFISH_OPTIONS,
  fallbacks: { kernel_append_params: 'pxe' },
} as const;
