import { PowerState, parsePrometheusText, Registry, ProvisionState as S, sampleSum } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { ConductorMetrics } from './conductor-metrics.js';

async function samplesOf(metrics: ConductorMetrics) {
  return parsePrometheusText(await metrics.registry.metrics());
}

/** Moves a node through `states`, one change at a time, as the task manager reports them. */
function walk(metrics: ConductorMetrics, node: string, states: string[]): void {
  for (let i = 1; i < states.length; i++)
    metrics.provisionStateChanged(node, states[i - 1] as string, states[i] as string);
}

describe('ConductorMetrics', () => {
  it('counts heartbeats, heartbeat failures and nodes taken over', async () => {
    const metrics = new ConductorMetrics(new Registry());
    metrics.heartbeatSent();
    metrics.heartbeatSent();
    metrics.heartbeatFailed();
    metrics.nodesTakenOver(3);
    metrics.nodesTakenOver(0);
    const samples = await samplesOf(metrics);
    expect(sampleSum(samples, 'bmaas_conductor_heartbeats_total')).toBe(2);
    expect(sampleSum(samples, 'bmaas_conductor_heartbeat_failures_total')).toBe(1);
    expect(sampleSum(samples, 'bmaas_conductor_takeover_nodes_total')).toBe(3);
  });

  it('times a deploy from deploying through its waits to active, and a failed one to deploy failed', async () => {
    const metrics = new ConductorMetrics(new Registry());
    walk(metrics, 'a', [S.AVAILABLE, S.DEPLOYING, S.DEPLOY_WAIT, S.DEPLOYING, S.ACTIVE]);
    walk(metrics, 'b', [S.AVAILABLE, S.DEPLOYING, S.DEPLOY_WAIT, S.DEPLOY_FAILED]);
    const samples = await samplesOf(metrics);
    const count = 'bmaas_deploy_duration_seconds_count';
    expect(sampleSum(samples, count, { result: 'success' })).toBe(1);
    expect(sampleSum(samples, count, { result: 'failure' })).toBe(1);
    expect(sampleSum(samples, 'bmaas_clean_duration_seconds_count')).toBe(0);
  });

  it('times cleanings to available or manageable, an undeploy only from its cleaning on, and aborts', async () => {
    const metrics = new ConductorMetrics(new Registry());
    walk(metrics, 'a', [S.MANAGEABLE, S.CLEANING, S.CLEAN_WAIT, S.CLEANING, S.AVAILABLE]);
    walk(metrics, 'b', [S.MANAGEABLE, S.CLEANING, S.CLEAN_WAIT, S.CLEANING, S.MANAGEABLE]);
    walk(metrics, 'c', [S.ACTIVE, S.DELETING, S.CLEANING, S.CLEAN_WAIT, S.CLEAN_FAILED]);
    walk(metrics, 'd', [S.AVAILABLE, S.DEPLOYING, S.DEPLOY_WAIT, S.DELETING]);
    const samples = await samplesOf(metrics);
    const clean = 'bmaas_clean_duration_seconds_count';
    expect(sampleSum(samples, clean, { result: 'success' })).toBe(2);
    expect(sampleSum(samples, clean, { result: 'failure' })).toBe(1);
    expect(sampleSum(samples, 'bmaas_deploy_duration_seconds_count', { result: 'aborted' })).toBe(1);
  });

  it('does not time an operation whose start it did not see (taken over, or begun before a restart)', async () => {
    const metrics = new ConductorMetrics(new Registry());
    walk(metrics, 'a', [S.DEPLOY_WAIT, S.DEPLOYING, S.ACTIVE]);
    expect(sampleSum(await samplesOf(metrics), 'bmaas_deploy_duration_seconds_count')).toBe(0);
  });

  it('counts agent command failures by known command and reason, others as other', async () => {
    const metrics = new ConductorMetrics(new Registry());
    metrics.commandFailed('execute_deploy_step', 'failed');
    metrics.commandFailed('execute_deploy_step', 'failed');
    metrics.commandFailed('power_off', 'unreachable');
    metrics.commandFailed('made_up_by_someone', 'refused');
    const samples = await samplesOf(metrics);
    const name = 'bmaas_agent_command_failures_total';
    expect(sampleSum(samples, name, { command: 'execute_deploy_step', reason: 'failed' })).toBe(2);
    expect(sampleSum(samples, name, { command: 'power_off', reason: 'unreachable' })).toBe(1);
    expect(sampleSum(samples, name, { command: 'other', reason: 'refused' })).toBe(1);
    expect(samples.some((s) => s.labels.command === 'made_up_by_someone')).toBe(false);
  });

  it('counts power changes and their failures by interface and target state', async () => {
    const metrics = new ConductorMetrics(new Registry());
    metrics.powerActionDone('ipmitool', PowerState.ON, true);
    metrics.powerActionDone('ipmitool', PowerState.OFF, false);
    metrics.powerActionDone('fake', PowerState.REBOOT, true);
    const samples = await samplesOf(metrics);
    expect(sampleSum(samples, 'bmaas_power_actions_total', { interface: 'ipmitool' })).toBe(2);
    expect(sampleSum(samples, 'bmaas_power_actions_total', { interface: 'fake', target: 'rebooting' })).toBe(1);
    expect(sampleSum(samples, 'bmaas_power_action_failures_total')).toBe(1);
    expect(
      sampleSum(samples, 'bmaas_power_action_failures_total', { interface: 'ipmitool', target: 'power off' }),
    ).toBe(1);
  });
});
