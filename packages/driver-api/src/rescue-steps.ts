import type { DeployInterface, StepOutcome } from './interfaces.js';
import type { Task } from './task.js';

/**
 * Optional capability of a deploy interface whose rescue boots a ramdisk and
 * waits for its agent (Ironic's agent rescue interface). Without it, rescue
 * and unrescue finish at once, as Ironic's fake rescue does.
 */
export interface RescueSteps {
  /** Boots the rescue ramdisk (rescuing); 'wait' -> rescue wait until the agent calls back. */
  rescue(task: Task): Promise<StepOutcome>;
  /** The rescue agent called back (rescue wait): tidy up the ramdisk boot. */
  finishRescue(task: Task): Promise<void>;
  /** Leaves rescue (unrescuing): boots the instance again. */
  unrescue(task: Task): Promise<void>;
}

export function rescueStepsOf(deploy: DeployInterface): RescueSteps | undefined {
  const candidate = deploy as DeployInterface & Partial<RescueSteps>;
  return typeof candidate.rescue === 'function' &&
    typeof candidate.finishRescue === 'function' &&
    typeof candidate.unrescue === 'function'
    ? (candidate as DeployInterface & RescueSteps)
    : undefined;
}
