import type { Task } from '@bmaas/driver-api';
import { rescueStepsOf } from '@bmaas/driver-api';

/** Interfaces Ironic reports on that nodes here do not have: always "not supported". */
const ABSENT = ['bios', 'console', 'firmware', 'inspect', 'network', 'raid', 'storage'] as const;

export type InterfaceValidation = Record<string, { result: boolean | null; reason?: string }>;

async function resultOf(check: () => Promise<void>): Promise<{ result: boolean; reason?: string }> {
  try {
    await check();
    return { result: true };
  } catch (error) {
    return { result: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * Ironic's validate_driver_interfaces: each interface's validate() in turn,
 * none stopping the others. Rescue is the deploy interface's rescue (it
 * needs the boot interface); absent kinds answer null.
 */
export async function validateInterfaces(task: Task): Promise<InterfaceValidation> {
  const { driver } = task;
  const answer: InterfaceValidation = {
    boot: await resultOf(() => driver.boot.validate(task)),
    deploy: await resultOf(() => driver.deploy.validate(task)),
    management: await resultOf(() => driver.management.validate(task)),
    power: await resultOf(() => driver.power.validate(task)),
  };
  answer.rescue = rescueStepsOf(driver.deploy)
    ? await resultOf(() => driver.boot.validate(task))
    : { result: null, reason: 'not supported' };
  for (const kind of ABSENT) answer[kind] = { result: null, reason: 'not supported' };
  return Object.fromEntries(Object.entries(answer).sort(([a], [b]) => a.localeCompare(b)));
}
