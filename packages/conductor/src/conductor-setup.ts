import { readFileSync } from 'node:fs';
import type { AgentCommandObserver } from '@bmaas/agent-client';
import {
  assertJsonRpcExposureAllowed,
  type BmaasConfig,
  ConfigError,
  HtpasswdUsers,
  jsonRpcAuthStrategy,
  type Logger,
} from '@bmaas/common';
import { fileServerAddress } from './http-file-server.js';
import { type ConductorIdentity, conductorIdentity } from './identity.js';
import type { PowerActionObserver } from './metrics/recorded-power.js';
import type { DriverCatalog } from './registry/catalog.js';
import { DriverRegistry } from './registry/driver-registry.js';
import { DRIVER_CATALOG } from './registry/enabled-interfaces.js';

/** Everything a conductor derives from its configuration alone. */
export interface ConductorSetup {
  config: BmaasConfig;
  identity: ConductorIdentity;
  registry: DriverRegistry;
  /** [json_rpc]auth_strategy = http_basic. */
  auth: HtpasswdUsers | undefined;
  /** [json_rpc]use_ssl. */
  tls: { cert: Buffer; key: Buffer } | undefined;
  /** [deploy]serve_http_root: where the file server listens. */
  fileServerAt: { host: string; port: number } | undefined;
}

function readTls(jsonRpc: BmaasConfig['json_rpc']): { cert: Buffer; key: Buffer } {
  if (!jsonRpc.cert_file || !jsonRpc.key_file) {
    throw new ConfigError('[json_rpc]use_ssl needs [json_rpc]cert_file and [json_rpc]key_file');
  }
  const read = (path: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new ConfigError(`${path}: cannot read (${(error as NodeJS.ErrnoException).code ?? error})`);
    }
  };
  return { cert: read(jsonRpc.cert_file), key: read(jsonRpc.key_file) };
}

/**
 * Checks what can be checked before touching the database or the network:
 * the enabled hardware types and interfaces (created here), TLS and htpasswd
 * files, the file server address, and that JSON-RPC is not open to the
 * network without authentication. Throws a one-line ConfigError.
 */
export function prepareConductor(options: {
  config: BmaasConfig;
  logger: Logger;
  catalog?: DriverCatalog | undefined;
  /** Hears of agent commands that did not succeed (the conductor's metrics). */
  agentCommands?: AgentCommandObserver | undefined;
  /** Hears of every power change (the conductor's metrics). */
  powerActions?: PowerActionObserver | undefined;
}): ConductorSetup {
  const { config } = options;
  assertJsonRpcExposureAllowed(config);
  const identity = conductorIdentity(config);
  const registry = DriverRegistry.create(options.catalog ?? DRIVER_CATALOG, {
    config,
    logger: options.logger,
    conductorHostname: identity.hostname,
    agentCommands: options.agentCommands,
    powerActions: options.powerActions,
  });
  return {
    config,
    identity,
    registry,
    auth:
      jsonRpcAuthStrategy(config) === 'http_basic'
        ? HtpasswdUsers.fromFile(config.json_rpc.http_basic_auth_user_file)
        : undefined,
    tls: config.json_rpc.use_ssl ? readTls(config.json_rpc) : undefined,
    fileServerAt: config.deploy.serve_http_root ? fileServerAddress(config.deploy) : undefined,
  };
}
