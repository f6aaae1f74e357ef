import {
  InvalidParameterValue,
  PowerState as Power,
  type PowerState,
  PowerStateFailure,
  RedfishError,
  waitFor,
} from '@bmaas/common';
import type { PowerInterface, Task } from '@bmaas/driver-api';
import { bmcName } from './driver-info.js';
import type { RedfishResource } from './redfish-client.js';
import { RedfishInterfaceBase } from './redfish-interface-base.js';
import { objectAt, RedfishNode, stringsAt } from './redfish-node.js';

/** ComputerSystem.PowerState → Ironic's power state (a transition counts as where it goes, as upstream). */
const POWER_STATES: Readonly<Record<string, PowerState>> = {
  On: Power.ON,
  PoweringOn: Power.ON,
  Off: Power.OFF,
  PoweringOff: Power.OFF,
};

/** The ResetTypes every service is assumed to offer when it advertises none. */
const ASSUMED_RESET_TYPES = ['On', 'ForceOff', 'GracefulShutdown', 'GracefulRestart', 'ForceRestart'];

/** One ComputerSystem.Reset, then the PowerState it must lead to. */
interface Step {
  /** ResetTypes that do it, preferred first. */
  resetTypes: readonly string[];
  expect: PowerState;
}

const ON: Step = { resetTypes: ['On', 'ForceOn'], expect: Power.ON };
const OFF: Step = { resetTypes: ['ForceOff'], expect: Power.OFF };
const SOFT_OFF: Step = { resetTypes: ['GracefulShutdown'], expect: Power.OFF };
const SOFT_RESTART: Step = { resetTypes: ['GracefulRestart'], expect: Power.ON };

/** The ComputerSystem.Reset action of a system: its target and the ResetTypes it advertises. */
export function resetActionOf(system: RedfishResource, systemPath: string): { target: string; types: string[] } {
  const action = objectAt(objectAt(system, 'Actions'), '#ComputerSystem.Reset');
  const target = typeof action.target === 'string' ? action.target : `${systemPath}/Actions/ComputerSystem.Reset`;
  return { target, types: stringsAt(action, 'ResetType@Redfish.AllowableValues') ?? ASSUMED_RESET_TYPES };
}

/**
 * Ironic's `redfish` power interface: ComputerSystem.Reset with a ResetType
 * the system advertises, each change confirmed by reading PowerState until
 * it holds ([conductor]power_state_change_timeout). A reboot of a running
 * machine is ForceOff then On, each confirmed, as ipmitool does: a
 * ForceRestart cannot be told from nothing by PowerState, and a BMC that
 * accepts a reset and never does it must not pass for a reboot. A soft
 * reboot is GracefulRestart where advertised (confirmed on), else
 * GracefulShutdown then On. A machine that is off is rebooted by powering it on.
 */
export class RedfishPowerInterface extends RedfishInterfaceBase implements PowerInterface {
  async getPowerState(task: Task): Promise<PowerState | null> {
    // One reading of the system per task: the power state sync's getHealth gets the same one.
    const { body } = await new RedfishNode(this.deps, task.node, task).system();
    return POWER_STATES[String(body.PowerState)] ?? null;
  }

  async setPowerState(task: Task, state: PowerState, timeoutSeconds?: number): Promise<void> {
    const node = new RedfishNode(this.deps, task.node);
    const timeout = timeoutSeconds ?? this.deps.powerStateChangeTimeout;
    const { path, body } = await node.system();
    const action = resetActionOf(body, path);
    const current = POWER_STATES[String(body.PowerState)];
    const steps = this.stepsFor(state, current, action.types);
    for (const step of steps) {
      const resetType = step.resetTypes.find((type) => action.types.includes(type));
      if (!resetType) {
        throw new RedfishError(
          `BMC ${bmcName(node.target)} offers none of the reset types ${step.resetTypes.join(', ')} for "${state}" (it offers ${action.types.join(', ')}).`,
        );
      }
      await node.client.post(node.target, action.target, { ResetType: resetType });
      task.logger.debug('Redfish reset sent', { resetType, bmc: bmcName(node.target) });
      await this.confirm(node, path, step.expect, timeout, state, resetType);
    }
    task.logger.info('power state changed', { target: state, bmc: bmcName(node.target) });
    const final = steps.at(-1)?.expect ?? current ?? null;
    await task.updateNode({ powerState: final, targetPowerState: null });
  }

  private stepsFor(state: PowerState, current: PowerState | undefined, offered: readonly string[]): Step[] {
    switch (state) {
      case Power.ON:
        return [ON];
      case Power.OFF:
        return [OFF];
      case Power.SOFT_POWER_OFF:
        return [SOFT_OFF];
      case Power.REBOOT:
        return current === Power.OFF ? [ON] : [OFF, ON];
      case Power.SOFT_REBOOT:
        if (current === Power.OFF) return [ON];
        return offered.includes('GracefulRestart') ? [SOFT_RESTART] : [SOFT_OFF, ON];
      default:
        throw new InvalidParameterValue(`Unsupported power state ${state}.`);
    }
  }

  /** Reads PowerState until it is `wanted`; PowerStateFailure after `timeoutSeconds`. */
  private async confirm(
    node: RedfishNode,
    path: string,
    wanted: PowerState,
    timeoutSeconds: number,
    requested: PowerState,
    resetType: string,
  ): Promise<void> {
    let last: string | undefined;
    try {
      await waitFor(
        `${wanted}`,
        async () => {
          const system = await node.client.get(node.target, path);
          last = String(system.PowerState);
          return last === (wanted === Power.ON ? 'On' : 'Off') ? true : undefined;
        },
        { timeoutMs: timeoutSeconds * 1000, intervalMs: this.deps.pollIntervalMs ?? 1000 },
      );
    } catch (error) {
      if (last === undefined || !(error instanceof Error) || !error.message.includes('timed out')) throw error;
      throw new PowerStateFailure(
        `BMC ${bmcName(node.target)} accepted ${resetType} but the system did not reach "${wanted}" within ${timeoutSeconds} s while setting "${requested}"; it reports PowerState ${last}.`,
      );
    }
  }
}
