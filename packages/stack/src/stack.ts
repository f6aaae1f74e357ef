import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BmaasConfig, type Logger, waitFor } from '@bmaas/common';
import { bootRootFiles, enabledBootDescriptors } from '@bmaas/conductor';
import { createStores, type Database, openDatabase, upgradeSchema } from '@bmaas/db';
import { type ChildRecord, ChildRegistry } from './child-registry.js';
import type { DatabaseReport } from './database-process.js';
import { conductorCertificate } from './json-rpc-tls.js';
import { MACHINE_FACING_HOST } from './machine-config.js';
import type { StackOptions } from './options.js';
import { processStartTime } from './pid-lock.js';
import { assertPortsFree, type PortClaim } from './port-check.js';
import { RestartBackoff } from './restart-backoff.js';
import { whyRootFilesNotServed } from './root-files-check.js';
import { apiEnvironment, conductorEnvironment } from './service-environment.js';
import { type ExitStatus, StackProcess } from './stack-process.js';

const require = createRequire(import.meta.url);
const DATABASE_SCRIPT = fileURLToPath(new URL('./database-process.js', import.meta.url));
const API_STOP_GRACE_MS = 10_000;
const DATABASE_STOP_GRACE_MS = 30_000;
const LEFTOVER_STOP_GRACE_MS = 15_000;

/**
 * Node options of the API and the conductors: a young generation of its full 16 MiB per semi-space
 * from the start. Left to itself V8 starts it at 1 MiB, grows it only as objects survive, and shrinks
 * it again after a quiet minute, so a boot storm met small young generations: the conductors
 * scavenged about four times as often (docs/performance.md, "Node records in V8's fast mode; a
 * young generation of full size").
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--min-semi-space-size=16'];

export interface ConductorEndpoint {
  name: string;
  hostname: string;
  jsonRpc: string;
  httpRoot: string;
  /** Where the file server listens (127.0.0.1). */
  httpUrl: string;
  /** [deploy]http_url: the same port at the address machines reach (options.machineHost). */
  machineHttpUrl: string;
}

export interface StackDeps {
  config: BmaasConfig;
  options: StackOptions;
  logger: Logger;
  /** Receives each output line of the children, prefixed with the child's name (default: none; recentOutput() keeps the last ones). */
  output?: (line: string) => void;
  /** The environment the children start from (default process.env); the stack adds what it resolved. */
  environment?: NodeJS.ProcessEnv;
  /** Scripts of the child processes (defaults: the built packages). */
  apiScript?: string;
  conductorScript?: string;
  databaseScript?: string;
  /** Bound on the whole start, from the first process to every conductor alive. */
  readyTimeoutMs?: number;
  /**
   * The install CA's directory (writeJsonRpcTlsConfig): each conductor gets a
   * certificate of its own from it, used when [json_rpc]use_ssl is on.
   */
  jsonRpcTlsDirectory?: string;
}

/** Thrown by `start()` when `stop()` was called meanwhile. */
export class StackStopped extends Error {
  override readonly name = 'StackStopped';
  constructor() {
    super('the stack was stopped while starting');
  }
}

function describeExit({ code, signal }: ExitStatus): string {
  return signal ? `killed by ${signal}` : `exit code ${code}`;
}

/**
 * The whole system on one machine: PostgreSQL (embedded, in a child process,
 * unless [database]connection is set), migrations, the API and N conductors.
 * Each child runs in a process group of its own; `stop()` stops them in order.
 */
export class Stack {
  private database: StackProcess | undefined;
  private api: StackProcess | undefined;
  private readonly conductorProcesses: StackProcess[] = [];
  private readonly registry: ChildRegistry;
  private stopping: Promise<void> | undefined;
  private ready = false;
  private readonly restarts = new RestartBackoff();
  private resolveFailure: (message: string) => void = () => {};
  /** Resolves with a message when a process exits during start-up, or the database exits on its own. */
  readonly failure = new Promise<string>((resolveFailure) => {
    this.resolveFailure = resolveFailure;
  });
  databaseUrl = '';
  /** PID of the embedded PostgreSQL server (the postmaster), when the stack runs one. */
  postmasterPid: number | null = null;
  readonly conductors: ConductorEndpoint[];
  readonly apiUrl: string;
  /** [api]public_endpoint: the API at the address machines reach. */
  readonly machineApiUrl: string;

  constructor(private readonly deps: StackDeps) {
    const { options, config } = deps;
    this.apiUrl = `http://${options.apiHost}:${options.apiPort}`;
    const machineHost = options.machineHost ?? MACHINE_FACING_HOST;
    this.machineApiUrl = `http://${machineHost}:${options.apiPort}`;
    const stateDir = resolve(config.DEFAULT.state_path, 'stack');
    this.registry = new ChildRegistry(join(stateDir, 'processes.json'));
    this.conductors = Array.from({ length: options.conductors }, (_, index) => {
      const i = index + 1;
      const port = options.jsonRpcBasePort + i;
      return {
        name: `conductor-${i}`,
        hostname: `127.0.0.1:${port}`,
        jsonRpc: `${config.json_rpc.use_ssl ? 'https' : 'http'}://127.0.0.1:${port}`,
        httpRoot: join(stateDir, `conductor-${i}`, 'httpboot'),
        httpUrl: `http://127.0.0.1:${options.httpBasePort + i}`,
        machineHttpUrl: `http://${machineHost}:${options.httpBasePort + i}`,
      };
    });
  }

  /** Every process the stack started, in start order. */
  get processes(): StackProcess[] {
    return [this.database, this.api, ...this.conductorProcesses].filter((p): p is StackProcess => p !== undefined);
  }

  /** The configuration the stack runs with (as its processes read it, less what the stack resolves). */
  get config(): BmaasConfig {
    return this.deps.config;
  }

  /** PID of the process named `name` (`database`, `api`, `conductor-1`, …) as it runs now, restarts included. */
  pidOf(name: string): number | undefined {
    return this.processes.find((p) => p.name === name)?.pid;
  }

  /** The last `lines` output lines of each process, prefixed with its name: for failure reports. */
  recentOutput(lines = 40): string {
    return this.processes
      .map((p) => p.tail(lines).replace(/^(?=.)/gm, `[${p.name}] `))
      .filter((text) => text !== '')
      .join('\n');
  }

  get stopRequested(): boolean {
    return this.stopping !== undefined;
  }

  get embeddedDatabase(): boolean {
    return !this.deps.config.database.connection;
  }

  /**
   * Starts everything and resolves once the API answers, every conductor shows
   * alive and every file server serves the root files of the enabled boot
   * interfaces (the registry's descriptors' root files). Throws StackStartRefused when
   * a port is taken (nothing started), StackStopped after `stop()`, else an
   * Error naming what failed; the caller then calls `stop()`.
   */
  async start(): Promise<void> {
    const deadline = Date.now() + (this.deps.readyTimeoutMs ?? 120_000);
    await this.registry.stopLeftovers(this.deps.logger, LEFTOVER_STOP_GRACE_MS);
    await assertPortsFree(this.portClaims());
    this.checkNotStopping();
    this.databaseUrl = this.deps.config.database.connection ?? (await this.startDatabase());
    this.checkNotStopping();
    await this.migrate();
    this.checkNotStopping();
    this.startApiAndConductors();
    await this.waitUntilReady(deadline);
    this.ready = true;
  }

  private portClaims(): PortClaim[] {
    const { options, config } = this.deps;
    const claims: PortClaim[] = [
      { host: options.apiHost, port: options.apiPort, owner: 'the API', option: '--api-port' },
    ];
    if (this.embeddedDatabase) {
      claims.push({
        host: '127.0.0.1',
        port: config.database.embedded_port,
        owner: 'the embedded PostgreSQL',
        option: '[database]embedded_port (BMAAS_DATABASE__EMBEDDED_PORT)',
      });
    }
    for (const c of this.conductors) {
      const rpc = new URL(c.jsonRpc);
      const files = new URL(c.httpUrl);
      claims.push(
        { host: rpc.hostname, port: Number(rpc.port), owner: `${c.name}'s JSON-RPC`, option: '--json-rpc-base-port' },
        {
          host: files.hostname,
          port: Number(files.port),
          owner: `${c.name}'s file server`,
          option: '--http-base-port',
        },
      );
    }
    return claims;
  }

  private checkNotStopping(): void {
    if (this.stopping) throw new StackStopped();
  }

  /** Starts the database process and waits for the URL it reports. */
  private async startDatabase(): Promise<string> {
    let reported: (report: DatabaseReport) => void = () => {};
    const report = new Promise<DatabaseReport>((resolveReport) => {
      reported = resolveReport;
    });
    const env = { ...this.environment, ...this.logFormatEnvironment() };
    this.database = this.spawn('database', this.deps.databaseScript ?? DATABASE_SCRIPT, env, {
      stdinPipe: true,
      // The report carries the database password: it is read, never shown.
      takeStdoutLine: (line) => {
        if (!line.startsWith('{"url":')) return false;
        reported(JSON.parse(line) as DatabaseReport);
        return true;
      },
    });
    const exited = this.database.exited.then((status) => {
      throw new Error(`the database process exited during start-up (${describeExit(status)}; see its output above)`);
    });
    exited.catch(() => {}); // only the race below cares, and only until the report
    this.recordChildren();
    const { url, postmasterPid } = await Promise.race([report, exited]);
    this.postmasterPid = postmasterPid;
    this.recordChildren();
    return url;
  }

  private async migrate(): Promise<void> {
    const db = openDatabase({ connection: this.databaseUrl, applicationName: 'bmaas-stack', logger: this.deps.logger });
    try {
      const applied = await upgradeSchema(db);
      this.deps.logger.info(
        applied.length ? `migrations applied: ${applied.join(', ')}` : 'database schema is up to date',
      );
    } finally {
      await db.destroy();
    }
  }

  private startApiAndConductors(): void {
    const common = this.childEnvironment();
    this.api = this.spawn('api', this.deps.apiScript ?? require.resolve('@bmaas/api/main'), {
      ...common,
      ...apiEnvironment(this.deps.options.apiHost, this.deps.options.apiPort),
    });
    const conductorScript = this.deps.conductorScript ?? require.resolve('@bmaas/conductor/main');
    for (const conductor of this.conductors) {
      mkdirSync(conductor.httpRoot, { recursive: true });
      const tls = this.deps.jsonRpcTlsDirectory;
      const child = this.spawn(conductor.name, conductorScript, {
        ...common,
        ...conductorEnvironment({
          host: '127.0.0.1',
          rpcPort: Number(new URL(conductor.jsonRpc).port),
          httpRoot: conductor.httpRoot,
          httpUrl: conductor.machineHttpUrl,
          fileServerHost: new URL(conductor.httpUrl).hostname,
          ...(tls === undefined ? {} : { certificate: conductorCertificate(tls, conductor.name, '127.0.0.1') }),
        }),
      });
      this.conductorProcesses.push(child);
    }
    this.recordChildren();
  }

  private recordChildren(): void {
    const children: ChildRecord[] = this.processes.flatMap((p) =>
      p.pid ? [{ name: p.name, pid: p.pid, startTime: processStartTime(p.pid) }] : [],
    );
    if (this.postmasterPid) {
      const pid = this.postmasterPid;
      children.push({ name: 'postgres', pid, startTime: processStartTime(pid), stopSignal: 'SIGINT' });
    }
    this.registry.record(children);
  }

  /** Environment shared by the API and the conductors: the user's settings plus what the stack resolved. */
  private childEnvironment(): NodeJS.ProcessEnv {
    return {
      ...this.environment,
      ...this.logFormatEnvironment(),
      BMAAS_DATABASE__CONNECTION: this.databaseUrl,
      BMAAS_API__PUBLIC_ENDPOINT: this.environment.BMAAS_API__PUBLIC_ENDPOINT ?? this.machineApiUrl,
    };
  }

  private get environment(): NodeJS.ProcessEnv {
    return this.deps.environment ?? process.env;
  }

  /** Children write to a pipe, where "auto" means JSON: they follow what the stack itself writes. */
  private logFormatEnvironment(): NodeJS.ProcessEnv {
    if (this.deps.config.DEFAULT.log_format !== 'auto') return {};
    return { BMAAS_DEFAULT__LOG_FORMAT: process.stdout.isTTY ? 'text' : 'json' };
  }

  private spawn(
    name: string,
    script: string,
    env: NodeJS.ProcessEnv,
    extra: { stdinPipe?: boolean; takeStdoutLine?: (line: string) => boolean } = {},
  ): StackProcess {
    const args = this.deps.options.configFiles.flatMap((file) => ['--config-file', resolve(file)]);
    const nodeFlags = name === 'database' ? [] : SERVER_NODE_FLAGS;
    const child = new StackProcess({ name, script, args, nodeFlags, env, output: this.deps.output, ...extra });
    const startedAt = Date.now();
    void child.exited.then((status) => {
      if (this.stopping) return;
      const what = `${name} (pid ${child.pid}) exited on its own (${describeExit(status)})`;
      // Before the stack is ready a crash is a failed start; afterwards the API and the
      // conductors are restarted (the database's exit still stops everything).
      if (!this.ready || name === 'database') {
        this.resolveFailure(what);
        return;
      }
      const delayMs = this.restarts.delayAfterExit(name, Date.now() - startedAt);
      const takeover = name.startsWith('conductor-') ? '; the other conductors take its nodes over meanwhile' : '';
      this.deps.logger.warn(`${what}; restarting it in ${delayMs / 1000} s${takeover}`, {
        process: name,
        exitCode: status.code,
        signal: status.signal,
        restartInMs: delayMs,
      });
      setTimeout(() => this.restart(name, script, env), delayMs).unref();
    });
    return child;
  }

  /** Starts `name` again in place of the process that exited, unless the stack is stopping. */
  private restart(name: string, script: string, env: NodeJS.ProcessEnv): void {
    if (this.stopping) return;
    const child = this.spawn(name, script, env);
    if (name === 'api') this.api = child;
    else {
      const index = this.conductorProcesses.findIndex((p) => p.name === name);
      if (index >= 0) this.conductorProcesses[index] = child;
    }
    this.recordChildren();
    this.deps.logger.info(`${name} restarted (pid ${child.pid})`, { process: name, pid: child.pid });
  }

  /**
   * Ready = the API answers its public version document, every conductor is
   * alive in the conductors table and every file server serves the enabled boot interfaces' root files.
   * Nothing here needs the API's credentials, whatever [DEFAULT]auth_strategy is.
   */
  private async waitUntilReady(deadline: number): Promise<void> {
    const expected = new Set(this.conductors.map((c) => c.hostname));
    const db = openDatabase({
      connection: this.databaseUrl,
      maxPoolSize: 1,
      applicationName: 'bmaas-stack',
      logger: this.deps.logger,
    });
    let missing = 'the API';
    try {
      await waitFor(
        'the stack to be ready',
        async () => {
          this.checkNotStopping();
          const dead = this.processes.find((p) => !p.running);
          if (dead) {
            throw new Error(
              `${dead.name} exited during start-up (${describeExit(dead.exitStatus as ExitStatus)}; see its output above)`,
            );
          }
          try {
            missing = await this.notReady(db, expected);
          } catch {
            missing = 'the API (not answering)';
          }
          return missing === '' ? true : undefined;
        },
        {
          timeoutMs: Math.max(0, deadline - Date.now()),
          intervalMs: 250,
          describe: () => `still waiting for ${missing}`,
        },
      );
    } finally {
      await db.destroy();
    }
  }

  /** What the stack still waits for, or '' when everything is ready. */
  private async notReady(db: Database, expected: ReadonlySet<string>): Promise<string> {
    const version = await fetch(`${this.apiUrl}/v1`, { signal: AbortSignal.timeout(2000) });
    await version.body?.cancel();
    if (!version.ok) return `the API (GET /v1: ${version.status})`;
    const alive = await createStores(db).conductors.listAlive(this.deps.config.conductor.heartbeat_timeout);
    const aliveNames = new Set(alive.map((c) => c.hostname));
    const notAlive = [...expected].filter((hostname) => !aliveNames.has(hostname));
    if (notAlive.length) return `conductors not alive: ${notAlive.join(', ')}`;
    const noFiles = [];
    for (const c of this.conductors) {
      const failure = await whyRootFilesNotServed(c.httpUrl, this.rootFiles);
      if (failure) noFiles.push(`${c.name} (${failure})`);
    }
    return noFiles.length ? `file servers not serving ${this.rootFiles.join(', ')}: ${noFiles.join(', ')}` : '';
  }

  /** The files every machine may fetch from a conductor, as the enabled boot interfaces' descriptors list them. */
  get rootFiles(): string[] {
    return bootRootFiles(enabledBootDescriptors(this.deps.config));
  }

  /**
   * Stops every child in order: the conductors (each marks itself offline and
   * releases its locks), then the API, then the database. Idempotent.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const conductorGrace = (this.deps.config.conductor.heartbeat_timeout / 2 + 5) * 1000;
      await Promise.all(this.conductorProcesses.map((p) => p.stop(conductorGrace)));
      await this.api?.stop(API_STOP_GRACE_MS);
      await this.database?.stop(DATABASE_STOP_GRACE_MS);
      this.registry.clear();
    })();
    return this.stopping;
  }

  /**
   * For a stack that exits without `stop()`: SIGKILL to the API and the
   * conductors at once. The database process is left to notice its standard
   * input close and stop PostgreSQL properly.
   */
  killChildren(): void {
    for (const p of [...this.conductorProcesses, this.api]) p?.kill();
  }
}
