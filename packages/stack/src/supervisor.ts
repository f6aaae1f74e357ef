import { join, resolve } from 'node:path';
import { ConfigError, createRootLogger, ensureInstallCredentials } from '@bmaas/common';
import { loadConductorConfig } from '@bmaas/conductor';
import { renderStackBanner } from './banner.js';
import { writeJsonRpcTlsConfig } from './json-rpc-tls.js';
import { STACK_BOOT_INTERFACES, writeEndpoints, writeMachineConfig } from './machine-config.js';
import { parseStackOptions, STACK_USAGE } from './options.js';
import { acquireLock } from './pid-lock.js';
import { StackStartRefused } from './port-check.js';
import { Stack } from './stack.js';

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** `npm start`: runs the stack until a signal; 0 after a stop asked for, 1 when anything failed. */
export async function runStack(argv: readonly string[]): Promise<number> {
  const options = parseStackOptions(argv);
  if (options === 'help') {
    process.stdout.write(`${STACK_USAGE}\n`);
    return 0;
  }
  // The conductors' view: core options and every plug-in's section, checked before anything starts.
  const userConfig = loadConductorConfig({ configFiles: options.configFiles });
  const logger = createRootLogger({
    level: userConfig.DEFAULT.log_level,
    format: userConfig.DEFAULT.log_format,
    stream: process.stdout,
  }).child({ component: 'stack' });

  const lockFile = join(resolve(userConfig.DEFAULT.state_path), 'stack.pid');
  const lock = acquireLock(lockFile);
  if ('heldBy' in lock) {
    process.stderr.write(
      `A stack is already running from this state directory (pid ${lock.heldBy}, ${lockFile}).\n` +
        `Stop it with Ctrl-C in its terminal or \`kill ${lock.heldBy}\`, then run npm start again.\n`,
    );
    return 1;
  }

  // Credentials made once per install: the stack is authenticated end to end unless the
  // operator's own files or environment say otherwise (they are read after these).
  const credentials = ensureInstallCredentials(join(resolve(userConfig.DEFAULT.state_path), 'credentials'));
  // And JSON-RPC over TLS with the install's CA (made once, beside the credentials), also overridable.
  const jsonRpcTlsConfig = writeJsonRpcTlsConfig(credentials.directory);
  // Then the real interfaces machines need (every boot interface, the agent's deploy, IPMI), also overridable.
  const machineConfig = writeMachineConfig(resolve(userConfig.DEFAULT.state_path));
  const configFiles = [credentials.configFile, jsonRpcTlsConfig, machineConfig, ...options.configFiles];
  const config = loadConductorConfig({ configFiles });
  // An operator's enabled_boot_interfaces replaces the stack's list (the last file wins, as in
  // ironic.conf): said at start, so an interface the stack would have enabled is not lost unnoticed.
  const dropped = STACK_BOOT_INTERFACES.filter((name) => !config.DEFAULT.enabled_boot_interfaces.includes(name));
  if (dropped.length > 0) {
    logger.warn(
      `[DEFAULT]enabled_boot_interfaces from your configuration (${config.DEFAULT.enabled_boot_interfaces.join(',')}) ` +
        `replaces the stack's (${STACK_BOOT_INTERFACES.join(',')}): not enabled: ${dropped.join(', ')}`,
    );
  }

  // A closed terminal or pipe must not turn an orderly stop into a crash: output is best effort.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
  const stack = new Stack({
    config,
    options: { ...options, configFiles },
    jsonRpcTlsDirectory: join(credentials.directory, 'tls'),
    logger,
    output: (line) => process.stdout.write(`${line}\n`),
  });
  // However this process ends, it leaves no child behind and no lock file.
  process.on('exit', () => {
    stack.killChildren();
    lock.release();
  });
  // Ctrl-C reaches npm, its script and this process, and each passes it on:
  // the first signal stops the stack, the repeats change nothing.
  const stopAsked = new Promise<NodeJS.Signals>((resolveSignal) => {
    for (const signal of STOP_SIGNALS) {
      process.on(signal, () => {
        if (!stack.stopRequested) {
          logger.info(`${signal}: stopping the conductors, then the API, then the database`);
          void stack.stop();
        }
        resolveSignal(signal);
      });
    }
  });

  let exitCode = 0;
  const outcome = await Promise.race([
    stack.start().then(
      () => 'ready' as const,
      (error: Error) => error,
    ),
    stopAsked.then(() => 'stop' as const),
  ]);
  if (outcome === 'ready') {
    writeEndpoints(resolve(userConfig.DEFAULT.state_path), {
      pid: process.pid,
      apiUrl: stack.apiUrl,
      machineApiUrl: stack.machineApiUrl,
      conductors: stack.conductors.map(({ name, hostname, httpUrl, machineHttpUrl }) => ({
        name,
        hostname,
        httpUrl,
        machineHttpUrl,
      })),
    });
    process.stdout.write(renderStackBanner(stack, config, credentials));
    const failure = await Promise.race([stack.failure, stopAsked.then(() => undefined)]);
    if (failure !== undefined) {
      logger.error(`${failure}: stopping everything`);
      exitCode = 1;
    }
  } else if (outcome instanceof StackStartRefused) {
    process.stderr.write(`Cannot start the stack: ${outcome.message}\n`);
    exitCode = 1;
  } else if (outcome instanceof Error && !stack.stopRequested) {
    logger.error(`the stack did not start: ${outcome.message}; stopping what did`);
    exitCode = 1;
  }
  await stack.stop();
  if (stack.processes.length > 0) logger.info('stopped');
  return exitCode;
}

/**
 * The stack's command: runs it with `argv` and ends the process with its exit code. What
 * `packages/stack/dist/main.js` runs, and what `npm start` loads into its own process
 * (scripts/run.mjs), so that no second Node process sits between npm and the children.
 */
export function runStackCommand(argv: readonly string[]): void {
  runStack(argv).then(
    (code) => process.exit(code),
    (error: Error) => {
      process.stderr.write(`${error instanceof ConfigError ? 'config error: ' : ''}${error.message ?? error}\n`);
      process.exit(1);
    },
  );
}
