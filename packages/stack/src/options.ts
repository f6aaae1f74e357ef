import { ConfigError, configFilesFromArgs } from '@bmaas/common';

/** What `npm start` can be told on its command line. */
export interface StackOptions {
  conductors: number;
  apiHost: string;
  apiPort: number;
  /** Conductor i (1-based) uses jsonRpcBasePort + i and httpBasePort + i. */
  jsonRpcBasePort: number;
  httpBasePort: number;
  configFiles: string[];
  /**
   * The address machines reach the API and the file servers at, published as
   * [api]public_endpoint and each [deploy]http_url (default MACHINE_FACING_HOST, where
   * `npm run lab` relays them); a program with no machines (the bench) passes 127.0.0.1.
   */
  machineHost?: string;
}

export const STACK_USAGE = `usage: npm start -- [--conductors N] [--api-host IP] [--api-port PORT]
                    [--json-rpc-base-port PORT] [--http-base-port PORT] [--config-file PATH]...

Starts PostgreSQL (embedded unless [database]connection is set), applies migrations,
then the API and N conductors (default 3), each with its own JSON-RPC port, http_root
and HTTP file server; conductor i listens on base port + i. Ctrl-C or SIGTERM stops the
conductors, then the API, then the database.

  --conductors N            how many conductors (1-50, default 3)
  --api-host IP             address of the API (default 127.0.0.1)
  --api-port PORT           port of the API (default 6385)
  --json-rpc-base-port PORT conductors' JSON-RPC ports are PORT+1..PORT+N (default 8090)
  --http-base-port PORT     conductors' file servers are on PORT+1..PORT+N (default 8080)
  --config-file PATH        ironic.conf-style file for every process (repeatable)

The state directory is [DEFAULT]state_path (BMAAS_DEFAULT__STATE_PATH, default .state);
the embedded PostgreSQL listens on [database]embedded_port (BMAAS_DATABASE__EMBEDDED_PORT,
default 5433).`;

function integer(name: string, text: string | undefined, min: number, max: number): number {
  const value = Number(text);
  if (!text || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`--${name} expects a whole number from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return value;
}

export function parseStackOptions(argv: readonly string[]): StackOptions | 'help' {
  const options: StackOptions = {
    conductors: 3,
    apiHost: '127.0.0.1',
    apiPort: 6385,
    jsonRpcBasePort: 8090,
    httpBasePort: 8080,
    configFiles: configFilesFromArgs(argv),
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = (argv[i] as string).split(/=(.*)/s, 2) as [string, string | undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--help':
      case '-h':
        return 'help';
      case '--conductors':
        options.conductors = integer('conductors', value(), 1, 50);
        break;
      case '--api-host':
        options.apiHost = value() ?? '';
        break;
      case '--api-port':
        options.apiPort = integer('api-port', value(), 1, 65535);
        break;
      case '--json-rpc-base-port':
        options.jsonRpcBasePort = integer('json-rpc-base-port', value(), 1, 65000);
        break;
      case '--http-base-port':
        options.httpBasePort = integer('http-base-port', value(), 1, 65000);
        break;
      case '--config-file':
        if (inline === undefined) i++;
        break;
      default:
        throw new ConfigError(`unknown option ${flag}\n${STACK_USAGE}`);
    }
  }
  return options;
}
