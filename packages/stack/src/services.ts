import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { freePort } from '@bmaas/common';
import { conductorCertificate, jsonRpcTlsEnvironment } from './json-rpc-tls.js';
import {
  apiEnvironment,
  type ConductorPlacement,
  conductorEnvironment,
  environmentWithoutSettings,
} from './service-environment.js';
import { type Spawner, StackProcess } from './stack-process.js';

const require = createRequire(import.meta.url);

/** The built API and conductor (`packages/*\/dist/main.js`): what every launcher starts. */
export const API_MAIN = require.resolve('@bmaas/api/main');
export const CONDUCTOR_MAIN = require.resolve('@bmaas/conductor/main');

export interface ServicesOptions {
  /** The database every process uses (already migrated). */
  databaseUrl: string;
  /** BMAAS_* settings of every process; nothing else of the caller's BMAAS_* reaches them. */
  env?: Record<string, string>;
  /** Config files every process reads (--config-file), before `env`. */
  configFiles?: readonly string[];
  /** Address every process listens on (default 127.0.0.1). */
  listenHost?: string;
  /** How the processes start (default: on this host), e.g. inside a lab namespace. */
  spawn?: Spawner;
  /** Each process's output goes to <logDir>/<name>.log. */
  logDir?: string;
  /** Bound on each process's start (default 20 s). */
  startTimeoutMs?: number;
  /**
   * JSON-RPC over TLS: the install CA in this directory (made on first use),
   * a certificate of its own for each conductor (its name, listenHost), every
   * process trusting the CA ([json_rpc]use_ssl, cafile; `env` may override).
   */
  jsonRpcTlsDirectory?: string;
}

/** A conductor of `Services`: its registered hostname is listenHost:port (its JSON-RPC port). */
export interface ConductorProcess {
  process: StackProcess;
  hostname: string;
  /** JSON-RPC port. */
  port: number;
  /** Its [deploy]http_root, [deploy]http_url and file server port, when it serves one. */
  httpRoot?: string;
  httpUrl?: string;
  httpPort?: number;
}

export interface ConductorStart {
  /** More BMAAS_* settings of this conductor, over the common ones. */
  env?: Record<string, string>;
  /** Its JSON-RPC port (default a free one). */
  rpcPort?: number;
  /** Serve [deploy]http_root (this directory) on its own file server at httpPort, published as httpUrl. */
  files?: { httpRoot: string; httpPort: number; httpUrl: string };
  /**
   * Its JSON-RPC certificate and key when jsonRpcTlsDirectory is set, e.g. one its host was
   * given; default: one made for conductor-<n> at listenHost.
   */
  certificate?: { certFile: string; keyFile: string };
}

/**
 * The API and conductors on a given database, on chosen or free ports, their JSON log lines
 * kept, stopped by PID (also when the test or tool that started them exits): what the tests,
 * the e2e labs and the bench start, with the environment each process gets from the same
 * functions the `npm start` stack (Stack) uses.
 */
export class Services {
  readonly conductors: ConductorProcess[] = [];
  api: StackProcess | undefined;
  apiPort: number | undefined;
  private readonly started: StackProcess[] = [];
  private readonly killOnExit = (): void => {
    for (const p of this.started) p.kill();
  };

  constructor(private readonly options: ServicesOptions) {
    process.once('exit', this.killOnExit);
    if (options.logDir) mkdirSync(options.logDir, { recursive: true });
  }

  get listenHost(): string {
    return this.options.listenHost ?? '127.0.0.1';
  }

  get apiUrl(): string | undefined {
    return this.apiPort === undefined ? undefined : `http://${this.listenHost}:${this.apiPort}`;
  }

  /** Every process started, in start order. */
  processes(): StackProcess[] {
    return [...this.started];
  }

  /** Starts one more conductor (conductor-<n>, n from 0) and waits until it has registered. */
  async startConductor(start: ConductorStart = {}): Promise<ConductorProcess> {
    const index = this.conductors.length;
    const port = start.rpcPort ?? (await freePort());
    const name = `conductor-${index}`;
    const placement: ConductorPlacement = { host: this.listenHost, rpcPort: port };
    const tls = this.options.jsonRpcTlsDirectory;
    if (tls !== undefined)
      placement.certificate = start.certificate ?? conductorCertificate(tls, name, this.listenHost);
    if (start.files) {
      mkdirSync(start.files.httpRoot, { recursive: true });
      Object.assign(placement, { httpRoot: start.files.httpRoot, httpUrl: start.files.httpUrl });
    }
    const conductor: ConductorProcess = {
      process: this.launch(name, CONDUCTOR_MAIN, { ...conductorEnvironment(placement), ...start.env }),
      hostname: `${this.listenHost}:${port}`,
      port,
      ...(start.files ?? {}),
    };
    this.conductors.push(conductor);
    await conductor.process.waitForLine((l) => l.message === 'conductor started', this.startTimeout);
    return conductor;
  }

  /** Starts the API (on `port`, default a free one) and waits until it listens. */
  async startApi(port?: number, env: Record<string, string> = {}): Promise<StackProcess> {
    this.apiPort = port ?? (await freePort());
    const api = this.launch('api', API_MAIN, { ...apiEnvironment(this.listenHost, this.apiPort), ...env });
    this.api = api;
    await api.waitForLine((line) => String(line.message).startsWith('API listening'), this.startTimeout);
    return api;
  }

  /** SIGTERM to every process by PID, SIGKILL after graceMs; resolves when all are gone. */
  async stop(graceMs = 5000): Promise<void> {
    await Promise.all(this.started.map((p) => p.stop(graceMs)));
    process.off('exit', this.killOnExit);
  }

  private get startTimeout(): number {
    return this.options.startTimeoutMs ?? 20_000;
  }

  private launch(name: string, script: string, env: Record<string, string>): StackProcess {
    const child = new StackProcess({
      name,
      script,
      args: (this.options.configFiles ?? []).flatMap((file) => ['--config-file', file]),
      env: {
        ...environmentWithoutSettings(),
        BMAAS_DATABASE__CONNECTION: this.options.databaseUrl,
        ...(this.options.jsonRpcTlsDirectory === undefined
          ? {}
          : jsonRpcTlsEnvironment(this.options.jsonRpcTlsDirectory)),
        ...this.options.env,
        ...env,
      },
      keepLines: true,
      detached: false,
      ...(this.options.spawn ? { spawn: this.options.spawn } : {}),
      ...(this.options.logDir ? { logFile: join(this.options.logDir, `${name}.log`) } : {}),
    });
    this.started.push(child);
    return child;
  }
}

export interface StartServicesOptions extends ServicesOptions {
  conductors: number;
  /** Per-conductor start options (ports, file server, settings), by index. */
  conductor?: (index: number) => ConductorStart | Promise<ConductorStart>;
  /** Start the API too (default), after the conductors have registered. */
  api?: boolean;
  apiPort?: number;
  /** More BMAAS_* settings of the API, over `env`. */
  apiEnv?: Record<string, string>;
}

/** Starts the conductors (at once), then the API; on any failure stops what started before rethrowing. */
export async function startServices(options: StartServicesOptions): Promise<Services> {
  for (const main of [CONDUCTOR_MAIN, ...(options.api === false ? [] : [API_MAIN])]) {
    if (!existsSync(main)) throw new Error(`${main} is missing: build first (npx tsc -b)`);
  }
  const services = new Services(options);
  try {
    const starts = await Promise.all(
      Array.from({ length: options.conductors }, (_, index) => options.conductor?.(index) ?? {}),
    );
    await Promise.all(starts.map((start) => services.startConductor(start)));
    if (options.api !== false) await services.startApi(options.apiPort, options.apiEnv);
    return services;
  } catch (error) {
    await services.stop(1000);
    throw error;
  }
}
