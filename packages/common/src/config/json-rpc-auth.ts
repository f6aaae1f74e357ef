import { isIP } from 'node:net';
import { ConfigError } from '../errors.js';
import type { BmaasConfig } from './load.js';

export type AuthStrategy = 'noauth' | 'http_basic';

/** [json_rpc]auth_strategy, or [DEFAULT]auth_strategy when it is unset. */
export function jsonRpcAuthStrategy(config: BmaasConfig): AuthStrategy {
  return (config.json_rpc.auth_strategy ?? config.DEFAULT.auth_strategy) as AuthStrategy;
}

/** True for addresses only this machine can reach: 127.0.0.0/8, ::1 and localhost. */
export function isLoopbackAddress(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || /^::ffff:127\./.test(bare);
  return false;
}

/**
 * Refuses a conductor that would serve JSON-RPC without authentication on an
 * address other machines can reach, unless the operator allowed it by name
 * ([json_rpc]allow_unauthenticated_remote_access).
 */
export function assertJsonRpcExposureAllowed(config: BmaasConfig): void {
  const { host_ip: host, allow_unauthenticated_remote_access: allowed } = config.json_rpc;
  if (jsonRpcAuthStrategy(config) !== 'noauth' || allowed || isLoopbackAddress(host)) return;
  throw new ConfigError(
    `JSON-RPC would listen on ${host} without authentication, and anyone reaching it could power machines on and off: ` +
      'set [DEFAULT]auth_strategy or [json_rpc]auth_strategy to http_basic (with [json_rpc]http_basic_auth_user_file), ' +
      'listen on loopback ([json_rpc]host_ip = 127.0.0.1), or set [json_rpc]allow_unauthenticated_remote_access = true',
  );
}
