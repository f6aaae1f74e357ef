import type { BiosSetting, FirmwareComponent, Logger, OptionalInterfaceType } from '@bmaas/common';
import type { OutOfBandSteps, ProvisionStep, StepOutcome, Task, UserStep } from '@bmaas/driver-api';

/** The interface kinds whose steps the conductor runs through the node's interface of that kind. */
const OUT_OF_BAND_KINDS: readonly OptionalInterfaceType[] = ['bios', 'firmware', 'raid'];

/** Where the conductor keeps what bios and firmware interfaces report (the hardware settings store). */
export interface HardwareCache {
  replaceBiosSettings(nodeId: number, settings: readonly BiosSetting[]): Promise<void>;
  replaceFirmwareComponents(nodeId: number, components: readonly FirmwareComponent[]): Promise<void>;
}

/** The node's interface that runs `step` out of band, if it offers that step. */
function runnerOf(task: Task, step: { interface: string; step: string }): OutOfBandSteps | undefined {
  if (!(OUT_OF_BAND_KINDS as readonly string[]).includes(step.interface)) return undefined;
  const candidate = task.driver[step.interface as OptionalInterfaceType] as Partial<OutOfBandSteps>;
  if (!candidate.getOutOfBandSteps || !candidate.executeOutOfBandStep) return undefined;
  const offered = candidate.getOutOfBandSteps(task).some((s) => s.step === step.step);
  return offered ? (candidate as OutOfBandSteps) : undefined;
}

/** Whether the node's interfaces run `step` themselves, without the ramdisk. */
export function isOutOfBandStep(task: Task, step: { interface: string; step: string }): boolean {
  return runnerOf(task, step) !== undefined;
}

/** `step` marked as run without the ramdisk, with the interface's priority when it had none. */
export function outOfBandStep(task: Task, step: ProvisionStep): ProvisionStep {
  const offered = runnerOf(task, step)
    ?.getOutOfBandSteps(task)
    .find((s) => s.step === step.step);
  return { ...offered, ...step, args: step.args ?? {}, requires_ramdisk: false } as ProvisionStep;
}

/**
 * Runs an out-of-band step through its interface; after a bios step the
 * node's cached BIOS settings are read again (they changed).
 */
export async function executeOutOfBandStep(task: Task, step: UserStep, cache: HardwareCache): Promise<StepOutcome> {
  const runner = runnerOf(task, step);
  if (!runner) throw new Error(`no interface of node ${task.node.uuid} runs step ${step.interface}.${step.step}`);
  const outcome = await runner.executeOutOfBandStep(task, step);
  if (step.interface === 'bios') await cacheBiosSettings(task, cache, task.logger);
  return outcome;
}

/** Reads the BIOS settings through the node's bios interface into the cache (nothing when it reports none). */
export async function cacheBiosSettings(task: Task, cache: HardwareCache, logger: Logger): Promise<void> {
  const settings = await task.driver.bios.getSettings?.(task);
  if (settings === undefined) return;
  await cache.replaceBiosSettings(task.node.id, settings);
  logger.info('BIOS settings cached', { settings: settings.length });
}

/**
 * Caches the BIOS settings and firmware components the node's interfaces
 * report, as Ironic does when a node is verified. Best effort: a failure is
 * logged and the node goes on (the cache keeps what it had).
 */
export async function cacheHardwareSettings(task: Task, cache: HardwareCache): Promise<void> {
  try {
    await cacheBiosSettings(task, cache, task.logger);
  } catch (error) {
    task.logger.warn('BIOS settings not cached', { error: (error as Error).message });
  }
  try {
    const components = await task.driver.firmware.getComponents?.(task);
    if (components !== undefined) {
      await cache.replaceFirmwareComponents(task.node.id, components);
      task.logger.info('firmware components cached', { components: components.length });
    }
  } catch (error) {
    task.logger.warn('firmware components not cached', { error: (error as Error).message });
  }
}
