#!/usr/bin/env node
import { ensureInstallCredentials } from './install-credentials.js';

/**
 * `bmaas-credentials DIRECTORY`: makes the install's credentials there unless
 * they exist (docker-compose.yml runs it once before the API and conductors).
 * Prints where they are, never the passwords.
 */
function main(argv: readonly string[]): number {
  const directory = argv[0];
  if (!directory || argv.length !== 1) {
    process.stderr.write('usage: bmaas-credentials DIRECTORY\n');
    return 2;
  }
  const credentials = ensureInstallCredentials(directory);
  process.stdout.write(
    `credentials in ${credentials.directory}: REST API user "${credentials.apiUser}", password in ${credentials.passwordFile}; ` +
      `config file ${credentials.configFile}\n`,
  );
  return 0;
}

process.exit(main(process.argv.slice(2)));
