import { type BmaasConfig, configSchema } from '@bmaas/common';

/** The JSON-RPC port a conductor registered under a bare host name listens on. */
export const DEFAULT_JSON_RPC_PORT: number = configSchema.json_rpc.port.default;

/**
 * Who this conductor is: the hostname it registers (and the API dials) and
 * its conductor group. On a non-default JSON-RPC port the registered name is
 * `host:port`, as upstream, so several conductors may share a machine.
 */
export interface ConductorIdentity {
  hostname: string;
  conductorGroup: string;
}

export function conductorIdentity(config: BmaasConfig): ConductorIdentity {
  const { host } = config.DEFAULT;
  const { port } = config.json_rpc;
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return {
    hostname: port === DEFAULT_JSON_RPC_PORT ? host : `${bracketed}:${port}`,
    conductorGroup: config.DEFAULT.default_conductor_group,
  };
}
