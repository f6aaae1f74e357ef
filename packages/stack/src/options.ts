import { freePort, freePortBlock, parseCommandLine, wholeNumber } from '@bmaas/common';

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

export function parseStackOptions(argv: readonly string[]): StackOptions | 'help' {
  const values = parseCommandLine(
    argv,
    {
      help: { type: 'boolean', short: 'h' },
      conductors: { type: 'string' },
      'api-host': { type: 'string' },
      'api-port': { type: 'string' },
      'json-rpc-base-port': { type: 'string' },
      'http-base-port': { type: 'string' },
      'config-file': { type: 'string', multiple: true },
    },
    STACK_USAGE,
  );
  if (values.help) return 'help';
  type NumberFlag = 'conductors' | 'api-port' | 'json-rpc-base-port' | 'http-base-port';
  const number = (flag: NumberFlag, fallback: number, min: number, max: number) => {
    const text = values[flag];
    return text === undefined ? fallback : wholeNumber(flag, text, min, max);
  };
  return {
    conductors: number('conductors', 3, 1, 50),
    apiHost: values['api-host'] ?? '127.0.0.1',
    apiPort: number('api-port', 6385, 1, 65535),
    jsonRpcBasePort: number('json-rpc-base-port', 8090, 1, 65000),
    httpBasePort: number('http-base-port', 8080, 1, 65000),
    configFiles: values['config-file'] ?? [],
  };
}

/**
 * A stack of `conductors` on loopback ports free now, publishing 127.0.0.1 to machines too:
 * for a program that runs the stack with no machines (the bench).
 */
export async function loopbackStackOptions(conductors: number, configFiles: string[]): Promise<StackOptions> {
  return {
    conductors,
    apiHost: '127.0.0.1',
    apiPort: await freePort(),
    jsonRpcBasePort: await freePortBlock(conductors),
    httpBasePort: await freePortBlock(conductors),
    configFiles,
    machineHost: '127.0.0.1',
  };
}
