import { type HardwareComponent, type IndicatorState, InvalidParameterValue } from '@bmaas/common';
import type { IndicatorInfo, SupportedIndicators } from '../interfaces.js';
import type { Task } from '../task.js';

/** driver_internal_info key of the indicators' states: component -> indicator id -> state. */
export const FAKE_INDICATORS_KEY = 'fake_indicators';

interface FakeIndicator extends IndicatorInfo {
  /** What the indicator shows until it is set. */
  initial: IndicatorState;
}

/**
 * The fake hardware's LEDs, after Ironic's fake management: a read-only
 * chassis LED that is on, a system LED that can blink, and a disk LED.
 */
const FAKE_INDICATORS: Readonly<Partial<Record<HardwareComponent, Record<string, FakeIndicator>>>> = {
  chassis: { 'led-0': { readonly: true, states: ['off', 'on'], initial: 'on' } },
  system: { led: { readonly: false, states: ['blinking', 'off', 'on'], initial: 'off' } },
  disk: { 'led-0': { readonly: false, states: ['off', 'on'], initial: 'off' } },
};

/** The fake's indicators, of every component or of `component` only. */
export function fakeSupportedIndicators(component?: HardwareComponent): SupportedIndicators {
  const supported: SupportedIndicators = {};
  for (const [name, indicators] of Object.entries(FAKE_INDICATORS) as Array<
    [HardwareComponent, Record<string, FakeIndicator>]
  >) {
    if (component !== undefined && component !== name) continue;
    supported[name] = Object.fromEntries(
      Object.entries(indicators).map(([id, { readonly, states }]) => [id, { readonly, states: [...states] }]),
    );
  }
  return supported;
}

function fakeIndicator(component: HardwareComponent, indicator: string): FakeIndicator {
  const indicators = FAKE_INDICATORS[component];
  if (!indicators) throw new InvalidParameterValue(`Invalid component ${component} specified.`);
  const found = indicators[indicator];
  if (!found) throw new InvalidParameterValue(`Invalid indicator ${indicator} specified.`);
  return found;
}

function storedStates(task: Task): Record<string, Record<string, IndicatorState>> {
  const stored = task.node.driverInternalInfo[FAKE_INDICATORS_KEY];
  return typeof stored === 'object' && stored !== null
    ? structuredClone(stored as Record<string, Record<string, IndicatorState>>)
    : {};
}

/** The state the fake indicator shows: the one last set, else its initial one. */
export function fakeIndicatorState(task: Task, component: HardwareComponent, indicator: string): IndicatorState {
  const { initial } = fakeIndicator(component, indicator);
  return storedStates(task)[component]?.[indicator] ?? initial;
}

/** Sets a fake indicator, kept in the node's driver_internal_info. */
export async function setFakeIndicatorState(
  task: Task,
  component: HardwareComponent,
  indicator: string,
  state: IndicatorState,
): Promise<void> {
  const found = fakeIndicator(component, indicator);
  if (found.readonly) {
    throw new InvalidParameterValue(`Indicator ${indicator} of component ${component} is read-only.`);
  }
  if (!found.states.includes(state)) {
    throw new InvalidParameterValue(
      `Invalid state ${state} for indicator ${indicator} of component ${component}, supported: ${found.states.join(', ')}.`,
    );
  }
  const states = storedStates(task);
  states[component] = { ...states[component], [indicator]: state };
  await task.updateNode({ driverInternalInfo: { ...task.node.driverInternalInfo, [FAKE_INDICATORS_KEY]: states } });
}
