import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRootLogger, freePort } from '@bmaas/common';
import {
  environmentWithoutSettings,
  loadConductorConfig,
  loopbackStackOptions,
  Stack,
  writeJsonRpcTlsConfig,
} from '@bmaas/stack';
import type { BenchOptions } from './options.js';

const PROFILE_PRELOAD = fileURLToPath(new URL('./cpu-profile-preload.js', import.meta.url));

/**
 * The product as `npm start` runs it (the one launcher, `Stack` of @bmaas/stack: embedded
 * PostgreSQL, migrations, the API, N conductors with their file servers), but in the bench's
 * directory, on free loopback ports, with the bench's settings: no automated cleaning (nodes go
 * straight to available) and no deploy call-back timeout. The children get none of the shell's
 * BMAAS_* settings: they must not change the product measured.
 */
export async function startStack(
  options: Pick<BenchOptions, 'noSendfile' | 'cpuProfileDir' | 'jsonRpcTls' | 'conductors'>,
  workDir: string,
  extraConfig: readonly string[] = [],
): Promise<Stack> {
  const configFile = join(workDir, 'bench.conf');
  writeFileSync(
    configFile,
    [
      '[DEFAULT]',
      `state_path = ${join(workDir, 'state')}`,
      'log_format = json',
      '[conductor]',
      'automated_clean = false',
      `file_url_allowed_paths = ${join(workDir, 'images')}`,
      // The periodic wait-timeout pass runs as with the defaults, but no node times out, even on a stack held for hours.
      'deploy_callback_timeout = 86400',
      '[deploy]',
      `http_server_sendfile = ${!options.noSendfile}`,
      '[database]',
      `embedded_port = ${await freePort()}`,
      ...extraConfig,
      '',
    ].join('\n'),
  );
  const environment = environmentWithoutSettings();
  if (options.cpuProfileDir) {
    // NODE_OPTIONS refuses --cpu-prof, so a preload profiles through the inspector.
    environment.BENCH_CPU_PROFILE_DIR = options.cpuProfileDir;
    environment.NODE_OPTIONS =
      `${environment.NODE_OPTIONS ?? ''} --import ${pathToFileURL(PROFILE_PRELOAD).href}`.trim();
  }
  // As npm start: the CA and json-rpc-tls.conf beside the credentials, each conductor a certificate of its own.
  const credentialsDir = join(workDir, 'credentials');
  const configFiles = options.jsonRpcTls ? [writeJsonRpcTlsConfig(credentialsDir), configFile] : [configFile];
  const stack = new Stack({
    config: loadConductorConfig({ configFiles, env: {} }),
    // What the stack itself says is kept out of the figures' way: only its warnings and errors show.
    logger: createRootLogger({ level: 'warn', format: 'text', stream: process.stderr }).child({ component: 'stack' }),
    environment,
    ...(options.jsonRpcTls ? { jsonRpcTlsDirectory: join(credentialsDir, 'tls') } : {}),
    readyTimeoutMs: 120_000,
    options: await loopbackStackOptions(options.conductors, configFiles),
  });
  try {
    await stack.start();
  } catch (error) {
    const output = stack.recentOutput(10);
    await stack.stop();
    throw new Error(`${(error as Error).message}\n${output}`);
  }
  if (options.cpuProfileDir) {
    const processes = stack.processes.map((p) => ({ name: p.name, pid: p.pid }));
    writeFileSync(join(options.cpuProfileDir, 'processes.json'), JSON.stringify(processes, null, 2));
  }
  return stack;
}
