#!/usr/bin/env node
import { join, resolve } from 'node:path';
import { ConfigError, createRootLogger, loadConfig } from '@bmaas/common';
import { renderStackBanner } from './banner.js';
import { parseStackOptions, STACK_USAGE } from './options.js';
import { acquireLock } from './pid-lock.js';
import { Stack } from './stack.js';

async function main(argv: string[]): Promise<number> {
  const options = parseStackOptions(argv);
  if (options === 'help') {
    process.stdout.write(`${STACK_USAGE}\n`);
    return 0;
  }
  const config = loadConfig({ configFiles: options.configFiles });
  const logger = createRootLogger({
    level: config.DEFAULT.log_level,
    format: config.DEFAULT.log_format,
    stream: process.stdout,
  }).child({ component: 'stack' });

  const lockFile = join(resolve(config.DEFAULT.state_path), 'stack.pid');
  const lock = acquireLock(lockFile);
  if ('heldBy' in lock) {
    process.stderr.write(
      `A stack is already running from this checkout (pid ${lock.heldBy}, ${lockFile}).\n` +
        `Stop it with Ctrl-C in its terminal or \`kill ${lock.heldBy}\`, then run npm start again.\n`,
    );
    return 1;
  }

  const stack = new Stack({ config, options, logger, output: (line) => process.stdout.write(`${line}\n`) });
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      logger.info('stopping the stack…');
      await stack.stop();
      lock.release();
      logger.info('stopped');
    })();
    return stopping;
  };
  const exitCode = new Promise<number>((resolveExit) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.on(signal, () => {
        stop().then(() => resolveExit(0));
      });
    }
  });

  try {
    await stack.start();
    await stack.waitUntilReady();
  } catch (error) {
    logger.error(String((error as Error).message ?? error));
    await stop();
    return 1;
  }
  process.stdout.write(renderStackBanner(stack, config));
  return exitCode;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(
      `${error instanceof ConfigError ? 'config error: ' : ''}${(error as Error).message ?? error}\n`,
    );
    process.exit(1);
  },
);
