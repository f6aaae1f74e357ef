import type { AgentCommandFailure, AgentCommandObserver } from '@bmaas/agent-client';
import { type PowerState, ProvisionState as S, secondsSince } from '@bmaas/common';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { PowerActionObserver } from './recorded-power.js';

/** Commands the conductor sends agents, by short name; any other name counts as `other`. */
const AGENT_COMMANDS = [
  'get_deploy_steps',
  'execute_deploy_step',
  'get_clean_steps',
  'execute_clean_step',
  'get_partition_uuids',
  'install_bootloader',
  'power_off',
  'sync',
  'collect_system_logs',
  'finalize_rescue',
  'lockdown',
] as const;

/** Deploys and cleanings take minutes on real machines: buckets from 10 s to 2 h. */
const OPERATION_SECONDS_BUCKETS = [10, 30, 60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200];

/** A deploy or a cleaning as timed: its states, where success ends, where failure ends. */
interface TimedOperation {
  states: ReadonlySet<string>;
  succeeded: ReadonlySet<string>;
  failed: string;
  durations: Histogram<'result'>;
}

/**
 * What a conductor records: its heartbeats, the nodes it took over, how
 * long deploys and cleanings took, power changes by interface (an observer
 * of the power interfaces) and agent command failures (an observer of the
 * agent client). The JSON-RPC server records its calls with
 * RpcCallMetrics in the same registry. Labels are bounded (result, command
 * name, reason); never a node.
 */
export class ConductorMetrics implements AgentCommandObserver, PowerActionObserver {
  private readonly heartbeats: Counter;
  private readonly databaseQueries: Counter;
  private readonly heartbeatFailures: Counter;
  private readonly takeovers: Counter;
  private readonly agentFailures: Counter<'command' | 'reason'>;
  private readonly powerActions: Counter<'interface' | 'target'>;
  private readonly powerFailures: Counter<'interface' | 'target'>;
  private readonly operations: readonly TimedOperation[];
  /** Operations under way on this conductor: node uuid -> operation and its start (performance.now()). */
  private readonly running = new Map<string, { operation: TimedOperation; started: number }>();

  /** @param registry the process's registry, served at the conductor's /metrics. */
  constructor(readonly registry: Registry) {
    const registers = [registry];
    const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Counter<L>({ name, help, labelNames, registers });
    this.heartbeats = counter(
      'bmaas_conductor_heartbeats_total',
      'Heartbeats this conductor wrote to the database (its row touched, or registered again).',
    );
    this.databaseQueries = counter(
      'bmaas_conductor_database_queries_total',
      'Statements this conductor sent to PostgreSQL (what the power state sync costs the database per node, among others).',
    );
    this.heartbeatFailures = counter(
      'bmaas_conductor_heartbeat_failures_total',
      'Heartbeats that failed (database unreachable): past [conductor]heartbeat_timeout without one, others treat this conductor as dead.',
    );
    this.takeovers = counter(
      'bmaas_conductor_takeover_nodes_total',
      'Nodes this conductor took over (boot environment rebuilt here) after the hash ring changed.',
    );
    this.agentFailures = counter(
      'bmaas_agent_command_failures_total',
      'Agent commands that did not succeed, by command (short name, other for an unknown one) and reason: failed (the agent reported it), unreachable (no answer after every attempt), refused (an HTTP error or an answer that is no command result).',
      ['command', 'reason'],
    );
    this.powerActions = counter(
      'bmaas_power_actions_total',
      'Power changes asked of a power interface, by interface name and target state (power on, power off, rebooting, …).',
      ['interface', 'target'],
    );
    this.powerFailures = counter(
      'bmaas_power_action_failures_total',
      'Power changes that failed (the hardware refused, did not answer, or did not reach the state in time), by interface and target state.',
      ['interface', 'target'],
    );
    const histogram = (name: string, help: string) =>
      new Histogram({ name, help, labelNames: ['result'] as const, buckets: OPERATION_SECONDS_BUCKETS, registers });
    this.operations = [
      {
        states: new Set([S.DEPLOYING, S.DEPLOY_WAIT, S.DEPLOY_HOLD]),
        succeeded: new Set([S.ACTIVE]),
        failed: S.DEPLOY_FAILED,
        durations: histogram(
          'bmaas_deploy_duration_seconds',
          'Deploys run on this conductor, from entering deploying to active (success), deploy failed (failure) or any other state (aborted).',
        ),
      },
      {
        states: new Set([S.CLEANING, S.CLEAN_WAIT, S.CLEAN_HOLD]),
        succeeded: new Set([S.AVAILABLE, S.MANAGEABLE]),
        failed: S.CLEAN_FAILED,
        durations: histogram(
          'bmaas_clean_duration_seconds',
          'Cleanings run on this conductor, from entering cleaning to available or manageable (success), clean failed (failure) or any other state (aborted).',
        ),
      },
    ];
    for (const command of [...AGENT_COMMANDS, 'other']) {
      for (const reason of ['failed', 'unreachable', 'refused']) this.agentFailures.inc({ command, reason }, 0);
    }
  }

  /** One statement sent to PostgreSQL (DatabaseOptions.onQuery). */
  databaseQuery(): void {
    this.databaseQueries.inc();
  }

  heartbeatSent(): void {
    this.heartbeats.inc();
  }

  heartbeatFailed(): void {
    this.heartbeatFailures.inc();
  }

  nodesTakenOver(count: number): void {
    this.takeovers.inc(count);
  }

  /**
   * A node's provision state changed under this conductor's lock. Entering
   * a deploy or a cleaning starts its clock; leaving it records its duration.
   * An operation that started on another conductor (takeover) or before a
   * restart is not timed.
   */
  provisionStateChanged(nodeUuid: string, from: string, to: string): void {
    const current = this.running.get(nodeUuid);
    if (current && !current.operation.states.has(to)) {
      this.running.delete(nodeUuid);
      const { operation } = current;
      const result = operation.succeeded.has(to) ? 'success' : to === operation.failed ? 'failure' : 'aborted';
      operation.durations.observe({ result }, secondsSince(current.started));
    }
    for (const operation of this.operations) {
      if (operation.states.has(to) && !operation.states.has(from)) {
        this.running.set(nodeUuid, { operation, started: performance.now() });
      }
    }
  }

  powerActionDone(interfaceName: string, target: PowerState, succeeded: boolean): void {
    this.powerActions.inc({ interface: interfaceName, target });
    if (!succeeded) this.powerFailures.inc({ interface: interfaceName, target });
  }

  commandFailed(command: string, reason: AgentCommandFailure): void {
    const known = (AGENT_COMMANDS as readonly string[]).includes(command) ? command : 'other';
    this.agentFailures.inc({ command: known, reason });
  }
}
