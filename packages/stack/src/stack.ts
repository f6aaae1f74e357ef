import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type { BmaasConfig, Logger } from '@bmaas/common';
import { type EmbeddedPostgresServer, openDatabase, resolveDatabaseUrl, upgradeSchema } from '@bmaas/db';
import { ManagedProcess } from './managed-process.js';
import type { StackOptions } from './options.js';

const require = createRequire(import.meta.url);

export interface ConductorEndpoint {
  name: string;
  hostname: string;
  jsonRpc: string;
  httpRoot: string;
  httpUrl: string;
}

export interface StackDeps {
  config: BmaasConfig;
  options: StackOptions;
  logger: Logger;
  output: (line: string) => void;
  /** Scripts of the API and conductor processes (defaults: the built packages). */
  apiScript?: string;
  conductorScript?: string;
}

/** The whole system on one machine: PostgreSQL, migrations, the API and N conductors. */
export class Stack {
  private embedded: EmbeddedPostgresServer | undefined;
  private readonly processes: ManagedProcess[] = [];
  databaseUrl = '';
  readonly conductors: ConductorEndpoint[];
  readonly apiUrl: string;

  constructor(private readonly deps: StackDeps) {
    const { options, config } = deps;
    this.apiUrl = `http://${options.apiHost}:${options.apiPort}`;
    const stateDir = resolve(config.DEFAULT.state_path, 'stack');
    this.conductors = Array.from({ length: options.conductors }, (_, index) => {
      const i = index + 1;
      const port = options.jsonRpcBasePort + i;
      return {
        name: `conductor-${i}`,
        hostname: `127.0.0.1:${port}`,
        jsonRpc: `http://127.0.0.1:${port}`,
        httpRoot: join(stateDir, `conductor-${i}`, 'httpboot'),
        httpUrl: `http://127.0.0.1:${options.httpBasePort + i}`,
      };
    });
  }

  get pids(): number[] {
    return this.processes.flatMap((p) => (p.pid ? [p.pid] : []));
  }

  async start(): Promise<void> {
    const { logger } = this.deps;
    const database = await resolveDatabaseUrl(this.deps.config, logger);
    this.embedded = database.embedded;
    this.databaseUrl = database.url;
    const db = openDatabase({ connection: database.url, applicationName: 'bmaas-stack' });
    try {
      const applied = await upgradeSchema(db);
      logger.info(applied.length ? `migrations applied: ${applied.join(', ')}` : 'database schema is up to date');
    } finally {
      await db.destroy();
    }
    const common = this.childEnvironment();
    const apiScript = this.deps.apiScript ?? require.resolve('@bmaas/api/main');
    const conductorScript = this.deps.conductorScript ?? require.resolve('@bmaas/conductor/main');
    this.spawn('api', apiScript, {
      ...common,
      BMAAS_API__HOST_IP: this.deps.options.apiHost,
      BMAAS_API__PORT: String(this.deps.options.apiPort),
    });
    for (const conductor of this.conductors) {
      mkdirSync(conductor.httpRoot, { recursive: true });
      const port = new URL(conductor.jsonRpc).port;
      this.spawn(conductor.name, conductorScript, {
        ...common,
        BMAAS_DEFAULT__HOST: '127.0.0.1',
        BMAAS_JSON_RPC__HOST_IP: '127.0.0.1',
        BMAAS_JSON_RPC__PORT: port,
        BMAAS_DEPLOY__HTTP_ROOT: conductor.httpRoot,
        BMAAS_DEPLOY__HTTP_URL: conductor.httpUrl,
        BMAAS_DEPLOY__SERVE_HTTP_ROOT: 'true',
        BMAAS_DEPLOY__HTTP_SERVER_HOST_IP: '127.0.0.1',
      });
    }
  }

  /** Environment shared by every child: the user's config files plus the database the stack resolved. */
  private childEnvironment(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      BMAAS_DATABASE__CONNECTION: this.databaseUrl,
      BMAAS_API__PUBLIC_ENDPOINT: process.env.BMAAS_API__PUBLIC_ENDPOINT ?? this.apiUrl,
    };
  }

  private spawn(name: string, script: string, env: NodeJS.ProcessEnv): void {
    const args = this.deps.options.configFiles.flatMap((file) => ['--config-file', resolve(file)]);
    const child = new ManagedProcess({ name, script, args, env, output: this.deps.output });
    child.exited.then(({ code, signal }) => {
      if (!this.stopping) this.deps.logger.error(`${name} exited unexpectedly (code ${code}, signal ${signal})`);
    });
    this.processes.push(child);
  }

  /** Resolves when the API answers and every conductor shows alive; rejects after timeoutMs. */
  async waitUntilReady(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const expected = new Set(this.conductors.map((c) => c.hostname));
    for (;;) {
      const dead = this.processes.find((p) => !p.running);
      if (dead) throw new Error(`${dead.name} exited during start-up (see its output above)`);
      try {
        const response = await fetch(`${this.apiUrl}/v1/conductors`, {
          headers: { 'X-OpenStack-Ironic-API-Version': 'latest' },
          signal: AbortSignal.timeout(2000),
        });
        if (response.ok) {
          const body = (await response.json()) as { conductors: Array<{ hostname: string; alive: boolean }> };
          const alive = body.conductors.filter((c) => c.alive && expected.has(c.hostname));
          if (alive.length === expected.size) return;
        }
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) throw new Error(`the stack was not ready after ${timeoutMs / 1000} s`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  private stopping = false;

  /** Stops every child (conductors first, then the API), then the embedded database. */
  async stop(): Promise<void> {
    this.stopping = true;
    const api = this.processes.filter((p) => p.name === 'api');
    await Promise.all(this.processes.filter((p) => p.name !== 'api').map((p) => p.stop()));
    await Promise.all(api.map((p) => p.stop()));
    await this.embedded?.stop();
    this.embedded = undefined;
  }
}
