import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type BmaasConfig, createRootLogger, freePort, freePortBlock } from '@bmaas/common';
import { type ConductorEndpoint, loadConductorConfig, Stack, writeJsonRpcTlsConfig } from '@bmaas/stack';
import type { ProcessTable } from './process-stats.js';

export interface BenchStackOptions {
  /** Throwaway directory: state (database, http roots) and the bench's configuration. */
  workDir: string;
  conductors: number;
  /** Write CPU profiles of the API and the conductors here (<package>-<pid>.cpuprofile). */
  cpuProfileDir?: string | undefined;
  /** [deploy]http_server_sendfile: false makes the file servers copy every chunk. */
  sendfile: boolean;
  /** JSON-RPC over TLS with a CA of the run's own (under workDir), as npm start turns it on. */
  jsonRpcTls?: boolean;
}

/** Lines kept per process (and for the stack itself): one chatty process must not push the others' out. */
const TAIL_LINES = 100;
const PROFILE_PRELOAD = fileURLToPath(new URL('./cpu-profile-preload.js', import.meta.url));

/**
 * The product as `npm start` runs it (packages/stack: embedded PostgreSQL,
 * migrations, the API, N conductors with their file servers), but in its own
 * directory, on free loopback ports, with the bench's settings: no automated
 * cleaning (nodes go straight to available) and no deploy call-back timeout.
 */
export class BenchStack {
  /** The last lines of each process, by the name they are prefixed with (`[api] …`); '' for the stack's own. */
  private readonly tails = new Map<string, string[]>();

  private constructor(
    readonly stack: Stack,
    readonly config: BmaasConfig,
  ) {}

  static async start(options: BenchStackOptions): Promise<BenchStack> {
    const stateDir = join(options.workDir, 'state');
    const configFile = join(options.workDir, 'bench.conf');
    writeFileSync(
      configFile,
      [
        '[DEFAULT]',
        `state_path = ${stateDir}`,
        'log_format = json',
        '[conductor]',
        'automated_clean = false',
        `file_url_allowed_paths = ${join(options.workDir, 'images')}`,
        // The periodic wait-timeout pass runs as with the defaults, but no node times out, even on a stack held for hours.
        'deploy_callback_timeout = 86400',
        '[deploy]',
        `http_server_sendfile = ${options.sendfile}`,
        '[database]',
        `embedded_port = ${await freePort()}`,
        '',
      ].join('\n'),
    );
    // The children inherit our environment: BMAAS_* settings of the shell must not change the product measured.
    for (const name of Object.keys(process.env)) if (name.startsWith('BMAAS_')) delete process.env[name];
    // As npm start: the CA and json-rpc-tls.conf beside the credentials, each conductor a certificate of its own.
    const credentialsDir = join(options.workDir, 'credentials');
    const configFiles = options.jsonRpcTls ? [writeJsonRpcTlsConfig(credentialsDir), configFile] : [configFile];
    const config = loadConductorConfig({ configFiles, env: {} });
    let bench: BenchStack | undefined;
    const logStream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        bench?.remember(chunk.toString().trimEnd());
        done();
      },
    });
    const logger = createRootLogger({ level: 'info', format: 'text', stream: logStream });
    const stack = new Stack({
      config,
      logger,
      ...(options.jsonRpcTls ? { jsonRpcTlsDirectory: join(credentialsDir, 'tls') } : {}),
      readyTimeoutMs: 120_000,
      output: (line) => bench?.remember(line),
      options: {
        conductors: options.conductors,
        apiHost: '127.0.0.1',
        apiPort: await freePort(),
        jsonRpcBasePort: await freePortBlock(options.conductors),
        httpBasePort: await freePortBlock(options.conductors),
        configFiles,
        // no machines here: scripts name the file servers where the bench and nginx reach them
        machineHost: '127.0.0.1',
      },
    });
    bench = new BenchStack(stack, config);
    const nodeOptions = process.env.NODE_OPTIONS;
    if (options.cpuProfileDir) {
      // The children inherit both; NODE_OPTIONS refuses --cpu-prof, so a preload profiles through the inspector.
      process.env.BENCH_CPU_PROFILE_DIR = options.cpuProfileDir;
      process.env.NODE_OPTIONS = `${nodeOptions ?? ''} --import ${pathToFileURL(PROFILE_PRELOAD).href}`.trim();
    }
    try {
      await stack.start();
    } catch (error) {
      await stack.stop();
      throw new Error(`${(error as Error).message}\n${bench.recentOutput()}`);
    } finally {
      delete process.env.BENCH_CPU_PROFILE_DIR;
      if (nodeOptions === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = nodeOptions;
    }
    if (options.cpuProfileDir) {
      const processes = stack.processes.map((p) => ({ name: p.name, pid: p.pid }));
      writeFileSync(join(options.cpuProfileDir, 'processes.json'), JSON.stringify(processes, null, 2));
    }
    return bench;
  }

  get apiUrl(): string {
    return this.stack.apiUrl;
  }

  get conductors(): readonly ConductorEndpoint[] {
    return this.stack.conductors;
  }

  get databaseUrl(): string {
    return this.stack.databaseUrl;
  }

  /** The PostgreSQL server and its backends. */
  postgresPids(processes: ProcessTable): number[] {
    const postmaster = this.stack.postmasterPid;
    return postmaster ? [postmaster, ...processes.childrenOf(postmaster)] : [];
  }

  /** PID of a child by name (`api`, `conductor-1`, …). */
  pidOf(name: string): number | undefined {
    return this.stack.processes.find((p) => p.name === name)?.pid;
  }

  /** The last lines the stack and its processes wrote, for failure reports. */
  recentOutput(): string {
    return [...this.tails.values()].map((lines) => lines.join('\n')).join('\n');
  }

  async stop(): Promise<void> {
    await this.stack.stop();
  }

  private remember(line: string): void {
    const name = /^\[([^\]]+)\]/.exec(line)?.[1] ?? '';
    const tail = this.tails.get(name) ?? [];
    if (tail.length === 0) this.tails.set(name, tail);
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
  }
}
