// The product under test in a lab: N conductors and the API, started by the one launcher
// (`startServices` of @bmaas/stack) on the host or inside a lab namespace, with the lab's
// settings (iPXE through the boot configuration API, QEMU power, a file server per conductor).
import { spawn as hostSpawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from '@bmaas/common';
import { killNow, onAbnormalExit } from '@bmaas/lab';
import { type ConductorProcess, type LogLine, type Spawner, type StackProcess, startServices } from '@bmaas/stack';

/**
 * Timings for a machine whose 2 cores are busy emulating machines: short enough for
 * quick rings, long enough that a starved event loop never looks like a dead conductor.
 */
export const LAB_TIMINGS: Readonly<Record<string, string>> = {
  BMAAS_CONDUCTOR__HEARTBEAT_INTERVAL: '2',
  BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: '30',
  BMAAS_CONDUCTOR__CHECK_PROVISION_STATE_INTERVAL: '5',
  BMAAS_CONDUCTOR__NODE_LOCKED_RETRY_ATTEMPTS: '10',
  BMAAS_CONDUCTOR__NODE_LOCKED_RETRY_INTERVAL: '0.3',
  BMAAS_DEFAULT__HASH_RING_RESET_INTERVAL: '5',
};

export interface ProductStackOptions {
  databaseUrl: string;
  conductors: number;
  /** Address every process listens on (JSON-RPC, REST, file servers). */
  listenHost: string;
  /** Address machines reach those ports at: listenHost on a lab bridge, the guestfwd address in user-mode. */
  publicHost: string;
  spawn: Spawner;
  /** Gets http-<n>/ (each conductor's [deploy]http_root) and logs/<process>.log. */
  workDir: string;
  /** More BMAAS_* settings for every process; a function when they depend on the ports chosen. */
  env?: Record<string, string> | ((layout: StackLayout) => Record<string, string>);
  startTimeoutMs?: number;
}

/** The addresses chosen before anything starts. */
export interface StackLayout {
  publicApiUrl: string;
  /** Each conductor's [deploy]http_url, by index. */
  httpUrls: string[];
}

/** A conductor of the lab: it always serves its own http root. */
export type ConductorOfStack = ConductorProcess & { httpRoot: string; httpUrl: string; httpPort: number };

export interface ProductStack {
  readonly conductors: readonly ConductorOfStack[];
  readonly api: StackProcess;
  readonly apiPort: number;
  /** [api]public_endpoint: the API as machines reach it. */
  readonly publicApiUrl: string;
  /** Every log line of every process so far. */
  allLines(): Array<LogLine & { process: string }>;
  /** SIGTERM each process by PID, SIGKILL after graceMs. */
  stop(graceMs?: number): Promise<void>;
}

/** Starts the conductors (in parallel), then the API once they are registered; stops all on a failed start. */
export async function startProductStack(options: ProductStackOptions): Promise<ProductStack> {
  const apiPort = await freePort();
  const publicApiUrl = `http://${options.publicHost}:${apiPort}`;
  const ports: Array<{ rpc: number; http: number }> = [];
  for (let index = 0; index < options.conductors; index++)
    ports.push({ rpc: await freePort(), http: await freePort() });
  const httpUrls = ports.map((port) => `http://${options.publicHost}:${port.http}`);
  const extraEnv = typeof options.env === 'function' ? options.env({ publicApiUrl, httpUrls }) : (options.env ?? {});
  // A test process killed by a signal runs no teardown: its children go with it all the same.
  const forgets: Array<() => void> = [];
  const spawn: Spawner = (command, args, spawnOptions) => {
    const child = options.spawn(command, args, spawnOptions);
    forgets.push(onAbnormalExit(() => killNow(child.pid)));
    return child;
  };
  const services = await startServices({
    databaseUrl: options.databaseUrl,
    conductors: options.conductors,
    listenHost: options.listenHost,
    spawn,
    logDir: join(options.workDir, 'logs'),
    startTimeoutMs: options.startTimeoutMs ?? 60_000,
    env: {
      ...LAB_TIMINGS,
      BMAAS_DATABASE__MAX_POOL_SIZE: '5',
      BMAAS_DEFAULT__LOG_FORMAT: 'json',
      // what scenarios check: the file servers' access lines, each boot configuration served
      BMAAS_DEFAULT__LOG_LEVEL: 'debug',
      BMAAS_API__PUBLIC_ENDPOINT: publicApiUrl,
    },
    conductor: (index) => ({
      rpcPort: (ports[index] as { rpc: number }).rpc,
      files: {
        httpRoot: join(options.workDir, `http-${index}`),
        httpPort: (ports[index] as { http: number }).http,
        httpUrl: httpUrls[index] as string,
      },
      env: {
        // The lab's bridge lives in a network namespace of its own: nothing else reaches it.
        BMAAS_JSON_RPC__ALLOW_UNAUTHENTICATED_REMOTE_ACCESS: 'true',
        BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe',
        BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
        BMAAS_DEFAULT__ENABLED_POWER_INTERFACES: 'fake,qemu',
        BMAAS_PXE__IPXE_USE_BOOT_CONFIG_API: 'true',
        ...extraEnv,
      },
    }),
    apiPort,
    apiEnv: extraEnv,
  }).catch((error: unknown) => {
    for (const forget of forgets) forget();
    throw error;
  });
  return {
    conductors: services.conductors as ConductorOfStack[],
    api: services.api as StackProcess,
    apiPort,
    publicApiUrl,
    allLines: () => services.processes().flatMap((p) => p.lines.map((line) => ({ ...line, process: p.name }))),
    stop: async (graceMs = 20_000) => {
      await services.stop(graceMs);
      for (const forget of forgets) forget();
    },
  };
}

/** Spawns on the host (user-mode networking reaches host loopback through guestfwd). */
export const spawnOnHost: Spawner = (command, args, options) => hostSpawn(command, [...args], options);
