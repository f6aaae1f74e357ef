import {
  BootConfigNotFound,
  type BootLookupRecord,
  isBmaasError,
  NoValidHost,
  RpcTimeout,
  TemporaryFailure,
  tryParseMac,
  UnsupportedDriverExtension,
  WAIT_STATES,
} from '@bmaas/common';
import type { ConductorClient } from '@bmaas/rpc-client';
import { DISCOVERY_SCRIPT_NAME } from './discovery-script.js';

/** Why a boot request was refused: logged, never shown to the client. */
export type BootRefusal =
  | 'malformed-request'
  | 'malformed-mac'
  | 'malformed-name'
  | 'unknown-mac'
  | 'state-not-allowed'
  | 'no-conductor'
  | 'unsupported-driver-extension'
  | 'config-not-found'
  | 'rpc-timeout'
  | 'rpc-error';

export type BootConfigAnswer =
  | { ok: true; content: string; nodeUuid: string }
  | { ok: false; reason: BootRefusal; nodeUuid?: string; detail?: string };

export interface BootConfigControllerDeps {
  /** The indexed MAC -> node query (PortStore.bootLookup). */
  lookup(mac: string): Promise<BootLookupRecord | undefined>;
  conductors: ConductorClient;
  /** [api]restrict_boot_config: serve only nodes in a `* wait` state. */
  restrictToWaitStates: boolean;
  /** [api]boot_config_rpc_timeout, in milliseconds. */
  rpcTimeoutMs: number;
  /** What an unknown MAC gets for `discovery.ipxe` when discovery is on; undefined = the usual refusal. */
  discoveryScript?: string | undefined;
}

/**
 * Names a boot interface may serve look like file names, never like paths.
 * The conductor's boot interface still decides which names it knows; this
 * only keeps junk from travelling further.
 */
const CONFIG_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * The boot configuration API's decision: MAC -> node -> state check ->
 * owning conductor -> the node's file. Every refusal is an answer, not an
 * exception, so the edge can give one uniform 404.
 */
export class BootConfigController {
  constructor(private readonly deps: BootConfigControllerDeps) {}

  async answer(rawMac: string, rawName: string, requestId: string | undefined): Promise<BootConfigAnswer> {
    const mac = tryParseMac(rawMac);
    if (mac === undefined) return { ok: false, reason: 'malformed-mac' };
    if (!CONFIG_NAME.test(rawName)) return { ok: false, reason: 'malformed-name' };

    const node = await this.deps.lookup(mac);
    if (!node) {
      if (rawName === DISCOVERY_SCRIPT_NAME && this.deps.discoveryScript !== undefined) {
        return { ok: true, content: this.deps.discoveryScript, nodeUuid: 'discovery' };
      }
      return { ok: false, reason: 'unknown-mac', detail: mac };
    }
    if (this.deps.restrictToWaitStates && !WAIT_STATES.has(node.provisionState as never)) {
      return { ok: false, reason: 'state-not-allowed', nodeUuid: node.nodeUuid, detail: node.provisionState };
    }
    try {
      const result = await this.deps.conductors.callForNode(
        { uuid: node.nodeUuid, driver: node.driver, conductorGroup: node.conductorGroup },
        'get_boot_config',
        { node_id: node.nodeUuid, name: rawName },
        { requestId, timeoutMs: this.deps.rpcTimeoutMs },
      );
      return { ok: true, content: result.content, nodeUuid: node.nodeUuid };
    } catch (error) {
      return { ok: false, reason: classify(error), nodeUuid: node.nodeUuid, detail: describe(error) };
    }
  }
}

function classify(error: unknown): BootRefusal {
  if (error instanceof NoValidHost || error instanceof TemporaryFailure) return 'no-conductor';
  if (error instanceof UnsupportedDriverExtension) return 'unsupported-driver-extension';
  if (error instanceof BootConfigNotFound) return 'config-not-found';
  if (error instanceof RpcTimeout) return 'rpc-timeout';
  return 'rpc-error';
}

function describe(error: unknown): string {
  if (isBmaasError(error)) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
