// The product under test: N conductor processes and the API (their dist/ builds), started on
// the host or inside a lab namespace, configured by environment, stopped by PID.
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { spawn as hostSpawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from '@bmaas/common';
import { killNow, onAbnormalExit } from '@bmaas/lab';
import { API_MAIN, CONDUCTOR_MAIN, type LogLine, StackProcess } from '../../support/stack.js';

/** Starts a process on the host, or inside a namespace (LabNetwork.spawn). */
export type Spawner = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

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

export interface ConductorOfStack {
  process: StackProcess;
  /** Registered name, host:port of its JSON-RPC server: what nodes' `conductor` field shows. */
  hostname: string;
  httpRoot: string;
  /** [deploy]http_url: where machines fetch this conductor's boot files. */
  httpUrl: string;
  httpPort: number;
}

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

/** The BMAAS_* every conductor gets: iPXE through the boot configuration API, QEMU power, local file servers. */
function conductorEnvironment(
  options: ProductStackOptions,
  rpcPort: number,
  httpPort: number,
  apiUrl: string,
): Record<string, string> {
  return {
    BMAAS_DEFAULT__HOST: options.listenHost,
    BMAAS_JSON_RPC__HOST_IP: options.listenHost,
    // The lab's bridge lives in a network namespace of its own: nothing else reaches it.
    BMAAS_JSON_RPC__ALLOW_UNAUTHENTICATED_REMOTE_ACCESS: 'true',
    BMAAS_JSON_RPC__PORT: String(rpcPort),
    BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe',
    BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
    BMAAS_DEFAULT__ENABLED_POWER_INTERFACES: 'fake,qemu',
    BMAAS_DEPLOY__HTTP_URL: `http://${options.publicHost}:${httpPort}`,
    BMAAS_DEPLOY__SERVE_HTTP_ROOT: 'true',
    BMAAS_DEPLOY__HTTP_SERVER_HOST_IP: options.listenHost,
    BMAAS_PXE__IPXE_USE_BOOT_CONFIG_API: 'true',
    BMAAS_API__PUBLIC_ENDPOINT: apiUrl,
  };
}

/** Starts the conductors (in parallel), then the API once they are registered; stops all on a failed start. */
export async function startProductStack(options: ProductStackOptions): Promise<ProductStack> {
  for (const main of [CONDUCTOR_MAIN, API_MAIN]) {
    if (!existsSync(main)) throw new Error(`${main} is missing: build first (npm run build)`);
  }
  const logDir = join(options.workDir, 'logs');
  await mkdir(logDir, { recursive: true });
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const apiPort = await freePort();
  const publicApiUrl = `http://${options.publicHost}:${apiPort}`;
  const ports = [];
  for (let index = 0; index < options.conductors; index++)
    ports.push({ rpc: await freePort(), http: await freePort() });
  const httpUrls = ports.map((port) => `http://${options.publicHost}:${port.http}`);
  const extraEnv = typeof options.env === 'function' ? options.env({ publicApiUrl, httpUrls }) : (options.env ?? {});
  const started: StackProcess[] = [];
  const forgets: Array<() => void> = [];

  const launch = (name: string, main: string, port: number, env: Record<string, string>): StackProcess => {
    const child = options.spawn(process.execPath, [main], {
      env: { ...baseEnvironment(), ...LAB_TIMINGS, ...commonEnvironment(options), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const log = createWriteStream(join(logDir, `${name}.log`));
    child.stdout?.on('data', (chunk: Buffer) => log.write(chunk));
    child.stderr?.on('data', (chunk: Buffer) => log.write(chunk));
    child.once('exit', () => log.end());
    forgets.push(onAbnormalExit(() => killNow(child.pid)));
    const stackProcess = new StackProcess(name, child, port);
    started.push(stackProcess);
    return stackProcess;
  };

  const stop = async (graceMs = 20_000): Promise<void> => {
    await Promise.all(started.map((p) => p.stop(graceMs)));
    for (const forget of forgets) forget();
  };

  try {
    const conductors = await Promise.all(
      ports.map(async ({ rpc: rpcPort, http: httpPort }, index): Promise<ConductorOfStack> => {
        const httpRoot = join(options.workDir, `http-${index}`);
        const env = {
          ...conductorEnvironment(options, rpcPort, httpPort, publicApiUrl),
          BMAAS_DEPLOY__HTTP_ROOT: httpRoot,
          ...extraEnv,
        };
        const conductor = launch(`conductor-${index}`, CONDUCTOR_MAIN, rpcPort, env);
        await conductor.waitForLine((line) => line.message === 'conductor started', timeoutMs);
        return {
          process: conductor,
          hostname: `${options.listenHost}:${rpcPort}`,
          httpRoot,
          httpUrl: httpUrls[index] as string,
          httpPort,
        };
      }),
    );
    const api = launch('api', API_MAIN, apiPort, {
      BMAAS_API__HOST_IP: options.listenHost,
      BMAAS_API__PORT: String(apiPort),
      BMAAS_API__PUBLIC_ENDPOINT: publicApiUrl,
      ...extraEnv,
    });
    await api.waitForLine((line) => String(line.message).startsWith('API listening'), timeoutMs);
    return {
      conductors,
      api,
      apiPort,
      publicApiUrl,
      allLines: () => started.flatMap((p) => p.lines.map((line) => ({ ...line, process: p.name }))),
      stop,
    };
  } catch (error) {
    await stop(1000);
    throw error;
  }
}

function commonEnvironment(options: ProductStackOptions): Record<string, string> {
  return {
    BMAAS_DATABASE__CONNECTION: options.databaseUrl,
    BMAAS_DATABASE__MAX_POOL_SIZE: '5',
    BMAAS_DEFAULT__LOG_FORMAT: 'json',
    // what scenarios check: the file servers' access lines, each boot configuration served
    BMAAS_DEFAULT__LOG_LEVEL: 'debug',
  };
}

/** Our processes read only what we give them: no BMAAS_* of the test runner. */
function baseEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('BMAAS_')));
}

/** Spawns on the host (user-mode networking reaches host loopback through guestfwd). */
export const spawnOnHost: Spawner = (command, args, options) => hostSpawn(command, [...args], options);
