import { type Services, startServices } from '@bmaas/stack';

/** Short timings so failures and takeovers show within seconds; any of them may be overridden. */
export const FAST_TIMINGS: Readonly<Record<string, string>> = {
  BMAAS_CONDUCTOR__HEARTBEAT_INTERVAL: '0.5',
  BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: '3',
  BMAAS_CONDUCTOR__CHECK_PROVISION_STATE_INTERVAL: '1',
  BMAAS_CONDUCTOR__NODE_LOCKED_RETRY_ATTEMPTS: '3',
  BMAAS_CONDUCTOR__NODE_LOCKED_RETRY_INTERVAL: '0.1',
  BMAAS_DEFAULT__HASH_RING_RESET_INTERVAL: '1',
};

/**
 * For suites that never stop a conductor on purpose: a heartbeat may be late by seconds while
 * QEMU machines of another suite take both cores, and a 3 s timeout then calls every
 * conductor dead ("No alive conductor is registered").
 */
export const PATIENT_HEARTBEATS: Readonly<Record<string, string>> = {
  BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: '30',
};

export interface TestServicesOptions {
  /** Test database (createTestDatabase().url). */
  databaseUrl: string;
  /** How many conductors to start. */
  conductors: number;
  /** BMAAS_* settings for every process, over FAST_TIMINGS. */
  env?: Record<string, string>;
  /** Per-conductor settings, over `env`. */
  conductorEnv?: (index: number) => Record<string, string>;
  /** Start the API too (default). */
  api?: boolean;
  /** The API's port; default a free one. Give one when the conductors must know the API's URL before it starts. */
  apiPort?: number;
  /** Bound on each process's start. */
  startTimeoutMs?: number;
  /** Config files every process reads (--config-file), e.g. an install's credentials.conf as `npm start` passes it. */
  configFiles?: readonly string[];
  /** JSON-RPC over TLS with the install CA in this directory (ServicesOptions.jsonRpcTlsDirectory). */
  jsonRpcTlsDirectory?: string;
}

/**
 * The one launcher (`startServices` of @bmaas/stack) with the settings of multi-process
 * tests: JSON logs, small database pools and FAST_TIMINGS, on free loopback ports.
 */
export function startTestServices(options: TestServicesOptions): Promise<Services> {
  const { conductorEnv } = options;
  return startServices({
    databaseUrl: options.databaseUrl,
    conductors: options.conductors,
    env: {
      BMAAS_DATABASE__MAX_POOL_SIZE: '5',
      BMAAS_DEFAULT__LOG_FORMAT: 'json',
      ...FAST_TIMINGS,
      ...options.env,
    },
    ...(conductorEnv ? { conductor: (index: number) => ({ env: conductorEnv(index) }) } : {}),
    ...(options.api === undefined ? {} : { api: options.api }),
    ...(options.apiPort === undefined ? {} : { apiPort: options.apiPort }),
    ...(options.startTimeoutMs === undefined ? {} : { startTimeoutMs: options.startTimeoutMs }),
    ...(options.configFiles ? { configFiles: options.configFiles } : {}),
    ...(options.jsonRpcTlsDirectory ? { jsonRpcTlsDirectory: options.jsonRpcTlsDirectory } : {}),
  });
}
