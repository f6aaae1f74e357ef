import { createSilentLogger, type Logger } from '@bmaas/common';
import type { ConductorCallOptions, ConductorClient } from './client.js';
import type { RpcMethodName, RpcParams, RpcResult } from './methods.js';
import { type AliveConductorSource, ConductorRing, type NodeRoutingKey } from './ring.js';
import { withDeadline } from './with-deadline.js';

/** One call the fake received, with the conductor the ring chose for it. */
export interface RecordedCall<M extends RpcMethodName = RpcMethodName> {
  host: string;
  method: M;
  params: RpcParams<M>;
  options: ConductorCallOptions;
}

/** Methods whose answer is null, so the fake can answer them without being told. */
const ANSWERS_NULL: ReadonlySet<RpcMethodName> = new Set<RpcMethodName>([
  'do_provisioning_action',
  'change_node_power_state',
  'heartbeat',
  'set_boot_device',
  'inject_nmi',
  'set_indicator_state',
  'vif_attach',
  'vif_detach',
  'set_target_raid_config',
  'set_console_mode',
  'set_boot_mode',
  'set_secure_boot_state',
  'attach_virtual_media',
  'detach_virtual_media',
  'create_allocation',
]);

type Handler<M extends RpcMethodName> = (params: RpcParams<M>, host: string) => RpcResult<M> | Promise<RpcResult<M>>;

export interface FakeConductorClientOptions {
  conductors: AliveConductorSource;
  /** Seconds; default 60. */
  heartbeatTimeout?: number;
  /** Seconds the ring is cached; default 0 (rebuilt on every call, so tests see new conductors at once). */
  resetInterval?: number;
  logger?: Logger;
}

/**
 * A ConductorClient for tests of the API: routing goes through a real
 * ConductorRing over the given conductors (so NoValidHost and
 * TemporaryFailure are real), calls are recorded instead of sent, and a test
 * may make a method answer something or throw.
 */
export class FakeConductorClient implements ConductorClient {
  readonly calls: RecordedCall[] = [];
  readonly ring: ConductorRing;
  private readonly handlers = new Map<RpcMethodName, Handler<RpcMethodName>>();
  private readonly failures = new Map<RpcMethodName, Error>();
  private closed = false;

  constructor(options: FakeConductorClientOptions) {
    this.ring = new ConductorRing({
      conductors: options.conductors,
      heartbeatTimeout: options.heartbeatTimeout ?? 60,
      resetInterval: options.resetInterval ?? 0,
      logger: options.logger ?? createSilentLogger(),
    });
  }

  /** Makes every later call of `method` run `handler` (by default methods answering null do so, others throw). */
  respondWith<M extends RpcMethodName>(method: M, handler: Handler<M>): void {
    this.handlers.set(method, handler as unknown as Handler<RpcMethodName>);
  }

  /** Makes every later call of `method` throw `error` (after routing), until clearFailures(). */
  failWith(method: RpcMethodName, error: Error): void {
    this.failures.set(method, error);
  }

  clearFailures(): void {
    this.failures.clear();
  }

  /** Recorded calls of one method. */
  callsOf<M extends RpcMethodName>(method: M): RecordedCall<M>[] {
    return this.calls.filter((call): call is RecordedCall<M> => call.method === method);
  }

  async hostFor(node: NodeRoutingKey): Promise<string> {
    return this.ring.hostFor(node);
  }

  /** Like the real client, a call given timeoutMs fails with RpcTimeout once it passes (a handler may never answer). */
  callForNode<M extends RpcMethodName>(
    node: NodeRoutingKey,
    method: M,
    params: RpcParams<M>,
    options: ConductorCallOptions = {},
  ): Promise<RpcResult<M>> {
    const answer = this.answer(node, method, params, options);
    return options.timeoutMs === undefined ? answer : withDeadline(answer, options.timeoutMs, `a fake ${method}`);
  }

  /** Like the real client: a random alive conductor (TemporaryFailure when none), then as callForNode. */
  callAny<M extends RpcMethodName>(
    method: M,
    params: RpcParams<M>,
    options: ConductorCallOptions = {},
  ): Promise<RpcResult<M>> {
    const answer = this.answer(() => this.ring.anyHost(), method, params, options);
    return options.timeoutMs === undefined ? answer : withDeadline(answer, options.timeoutMs, `a fake ${method}`);
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private async answer<M extends RpcMethodName>(
    route: NodeRoutingKey | (() => Promise<string>),
    method: M,
    params: RpcParams<M>,
    options: ConductorCallOptions,
  ): Promise<RpcResult<M>> {
    if (this.closed) throw new Error('FakeConductorClient is closed');
    const host = typeof route === 'function' ? await route() : await this.ring.hostFor(route);
    this.calls.push({ host, method, params, options } as RecordedCall);
    const failure = this.failures.get(method);
    if (failure) throw failure;
    const handler = this.handlers.get(method) as Handler<M> | undefined;
    if (handler) return handler(params, host);
    if (!ANSWERS_NULL.has(method))
      throw new Error(`FakeConductorClient: no answer set for ${method} (use respondWith)`);
    return null as RpcResult<M>;
  }
}
