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
import type { PortStore } from '@bmaas/db';
import type { ConductorClient } from '@bmaas/rpc-client';
import type { BootLookupIndex } from './boot-lookup-index.js';

/** Why a boot request was refused: logged and counted, never shown to the client. */
export const BOOT_REFUSALS = [
  'malformed-request',
  'malformed-mac',
  'malformed-name',
  'unknown-mac',
  'state-not-allowed',
  'no-conductor',
  'unsupported-driver-extension',
  'config-not-found',
  'rpc-timeout',
  'rpc-error',
  'database-unavailable',
  'deadline',
] as const;

export type BootRefusal = (typeof BOOT_REFUSALS)[number];

/** The nodeUuid of the discovery script's answer: it is served to a MAC no node has. */
export const DISCOVERY_NODE = 'discovery';

/** `mac` is the requested MAC as parsed, present once it parsed (observers see it; the requester never does). */
export type BootConfigAnswer =
  | { ok: true; content: string; nodeUuid: string; mac: string }
  | { ok: false; reason: BootRefusal; mac?: string; nodeUuid?: string; detail?: string };

export interface BootConfigControllerDeps {
  /** The indexed MAC -> node query (batched by the store under load). */
  ports: Pick<PortStore, 'bootLookup'>;
  /** The MAC index in memory ([database]boot_path_cache); asked first, trusted only for a node that may be served. */
  index?: Pick<BootLookupIndex, 'get'> | undefined;
  conductors: ConductorClient;
  /** [api]restrict_boot_config: serve only nodes in a `* wait` state. */
  restrictToWaitStates: boolean;
  /** [api]boot_config_rpc_timeout, in milliseconds: the bound on the whole answer, database included. */
  rpcTimeoutMs: number;
  /**
   * [discovery] when enabled: an unknown MAC's request goes to a conductor
   * of the discovered nodes' hardware type, whose boot interfaces render
   * their discovery configurations; undefined = the usual refusal.
   */
  discovery?: { driver: string } | undefined;
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

  /**
   * Answers within rpcTimeoutMs whatever the database or the conductor do:
   * a lookup that fails or is still running at the deadline is a refusal
   * (the uniform 404 firmware retries), never a hang or a 500. A node the
   * index may serve goes straight to its owner, whose call is bounded by
   * the client's timeout; only a lookup in PostgreSQL needs a timer here.
   */
  answer(rawMac: string, rawName: string, requestId: string | undefined): Promise<BootConfigAnswer> {
    const mac = tryParseMac(rawMac);
    if (mac === undefined) return Promise.resolve({ ok: false, reason: 'malformed-mac' });
    if (!CONFIG_NAME.test(rawName)) return Promise.resolve({ ok: false, reason: 'malformed-name', mac });
    const indexed = this.deps.index?.get(mac);
    if (indexed && this.servable(indexed)) {
      // The boot storm's path: no promise or timer beyond the call's own (each showed in its profile).
      return this.fromOwner(indexed, mac, rawName, requestId, this.deps.rpcTimeoutMs);
    }
    // Unknown to the index, or not servable there: PostgreSQL decides (it may have changed since the last poll).
    return this.afterLookup(mac, rawName, requestId, Date.now() + this.deps.rpcTimeoutMs);
  }

  private async afterLookup(
    mac: string,
    rawName: string,
    requestId: string | undefined,
    deadline: number,
  ): Promise<BootConfigAnswer> {
    const looked = await settleBy(this.deps.ports.bootLookup(mac), deadline);
    if (looked.kind === 'late') return { ok: false, reason: 'deadline', detail: `lookup of ${mac}`, mac };
    if (looked.kind === 'failed')
      return { ok: false, reason: 'database-unavailable', detail: describe(looked.error), mac };
    const node = looked.value;
    if (!node) {
      if (this.deps.discovery) {
        return this.discoveryConfig(this.deps.discovery.driver, mac, rawName, requestId, deadline);
      }
      return { ok: false, reason: 'unknown-mac', detail: mac, mac };
    }
    if (!this.servable(node)) {
      return { ok: false, reason: 'state-not-allowed', nodeUuid: node.nodeUuid, detail: node.provisionState, mac };
    }
    return this.fromOwner(node, mac, rawName, requestId, Math.max(1, deadline - Date.now()));
  }

  /**
   * The discovery configuration `rawName` from a conductor of `driver`
   * (spread over them by MAC). A name no enabled boot interface renders for
   * discovery stays what it was: an unknown MAC.
   */
  private discoveryConfig(
    driver: string,
    mac: string,
    rawName: string,
    requestId: string | undefined,
    deadline: number,
  ): Promise<BootConfigAnswer> {
    return this.deps.conductors
      .callForNode(
        { uuid: `${DISCOVERY_NODE}:${mac}`, driver, conductorGroup: '' },
        'get_discovery_config',
        { name: rawName },
        { requestId, timeoutMs: Math.max(1, deadline - Date.now()) },
      )
      .then(
        (value): BootConfigAnswer => ({ ok: true, content: value.content, nodeUuid: DISCOVERY_NODE, mac }),
        (error: unknown): BootConfigAnswer =>
          error instanceof BootConfigNotFound
            ? { ok: false, reason: 'unknown-mac', detail: mac, mac }
            : { ok: false, reason: classify(error), detail: describe(error), mac },
      );
  }

  /** The owning conductor's answer within timeoutMs (the client's bound: routing and call). */
  private fromOwner(
    node: BootLookupRecord,
    mac: string,
    rawName: string,
    requestId: string | undefined,
    timeoutMs: number,
  ): Promise<BootConfigAnswer> {
    const { nodeUuid } = node;
    return this.deps.conductors
      .callForNode(
        { uuid: nodeUuid, driver: node.driver, conductorGroup: node.conductorGroup },
        'get_boot_config',
        { node_id: nodeUuid, name: rawName },
        { requestId, timeoutMs },
      )
      .then(
        (value): BootConfigAnswer => ({ ok: true, content: value.content, nodeUuid, mac }),
        (error: unknown): BootConfigAnswer => ({
          ok: false,
          reason: classify(error),
          nodeUuid,
          detail: describe(error),
          mac,
        }),
      );
  }

  private servable(node: BootLookupRecord): boolean {
    return !this.deps.restrictToWaitStates || WAIT_STATES.has(node.provisionState as never);
  }
}

type Settled<T> = { kind: 'ok'; value: T } | { kind: 'failed'; error: unknown } | { kind: 'late' };

const LATE: Settled<never> = { kind: 'late' };

/** How `work` ended, or 'late' when it had not by `deadline` (epoch ms); work still running then is dropped. */
function settleBy<T>(work: Promise<T>, deadline: number): Promise<Settled<T>> {
  return new Promise<Settled<T>>((resolve) => {
    const timer = setTimeout(() => resolve(LATE), Math.max(0, deadline - Date.now()));
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve({ kind: 'ok', value });
      },
      (error: unknown) => {
        clearTimeout(timer);
        resolve({ kind: 'failed', error });
      },
    );
  });
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
