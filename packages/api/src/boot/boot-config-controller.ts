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
import { DISCOVERY_SCRIPT_NAME } from './discovery-script.js';

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

  /**
   * Answers within rpcTimeoutMs whatever the database or the conductor do:
   * a lookup that fails or is still running at the deadline is a refusal
   * (the uniform 404 firmware retries), never a hang or a 500.
   */
  async answer(rawMac: string, rawName: string, requestId: string | undefined): Promise<BootConfigAnswer> {
    const mac = tryParseMac(rawMac);
    if (mac === undefined) return { ok: false, reason: 'malformed-mac' };
    if (!CONFIG_NAME.test(rawName)) return { ok: false, reason: 'malformed-name', mac };

    const deadline = Date.now() + this.deps.rpcTimeoutMs;
    // One timer for the whole answer, lookup and call (a timer per phase was two per request).
    const late = new Deadline(deadline);
    try {
      return await this.answerBefore(mac, rawName, requestId, late);
    } finally {
      late.cancel();
    }
  }

  private async answerBefore(
    mac: string,
    rawName: string,
    requestId: string | undefined,
    late: Deadline,
  ): Promise<BootConfigAnswer> {
    let node = this.deps.index?.get(mac);
    if (!node || !this.servable(node)) {
      // Unknown to the index, or not servable there: PostgreSQL decides (it may have changed since the last poll).
      const looked = await late.race(this.deps.ports.bootLookup(mac));
      if (looked.kind === 'late') return { ok: false, reason: 'deadline', detail: `lookup of ${mac}`, mac };
      if (looked.kind === 'failed') {
        return { ok: false, reason: 'database-unavailable', detail: describe(looked.error), mac };
      }
      node = looked.value;
    }
    if (!node) {
      if (rawName === DISCOVERY_SCRIPT_NAME && this.deps.discoveryScript !== undefined) {
        return { ok: true, content: this.deps.discoveryScript, nodeUuid: DISCOVERY_NODE, mac };
      }
      return { ok: false, reason: 'unknown-mac', detail: mac, mac };
    }
    if (!this.servable(node)) {
      return { ok: false, reason: 'state-not-allowed', nodeUuid: node.nodeUuid, detail: node.provisionState, mac };
    }
    const call = this.deps.conductors.callForNode(
      { uuid: node.nodeUuid, driver: node.driver, conductorGroup: node.conductorGroup },
      'get_boot_config',
      { node_id: node.nodeUuid, name: rawName },
      { requestId, timeoutMs: Math.max(1, late.at - Date.now()) },
    );
    const called = await late.race(call);
    if (called.kind === 'ok') return { ok: true, content: called.value.content, nodeUuid: node.nodeUuid, mac };
    if (called.kind === 'late') return { ok: false, reason: 'rpc-timeout', nodeUuid: node.nodeUuid, mac };
    return { ok: false, reason: classify(called.error), nodeUuid: node.nodeUuid, detail: describe(called.error), mac };
  }

  private servable(node: BootLookupRecord): boolean {
    return !this.deps.restrictToWaitStates || WAIT_STATES.has(node.provisionState as never);
  }
}

type Settled<T> = { kind: 'ok'; value: T } | { kind: 'failed'; error: unknown } | { kind: 'late' };

const LATE: Settled<never> = { kind: 'late' };

/**
 * The end of one answer: races work against it; work still running then is
 * dropped. One timer for the answer; each race is one promise settled by
 * whichever comes first (Promise.race over mapped promises was several per
 * request).
 */
class Deadline {
  private readonly timer: NodeJS.Timeout;
  private passed = false;
  /** Settles the race in progress as late when the deadline passes. */
  private onLate: (() => void) | undefined;

  constructor(readonly at: number) {
    this.timer = setTimeout(
      () => {
        this.passed = true;
        this.onLate?.();
      },
      Math.max(0, at - Date.now()),
    );
  }

  /** How `work` ended, or 'late' when it had not by the deadline. */
  race<T>(work: Promise<T>): Promise<Settled<T>> {
    if (this.passed) return Promise.resolve(LATE);
    return new Promise<Settled<T>>((resolve) => {
      this.onLate = () => resolve(LATE);
      work.then(
        (value) => resolve({ kind: 'ok', value }),
        (error: unknown) => resolve({ kind: 'failed', error }),
      );
    });
  }

  cancel(): void {
    clearTimeout(this.timer);
    this.onLate = undefined;
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
