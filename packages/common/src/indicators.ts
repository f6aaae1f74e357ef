import { InvalidParameterValue } from './errors.js';

/** Hardware components that carry indicators, as Ironic names them (ironic.common.components). */
export const HARDWARE_COMPONENTS = ['system', 'chassis', 'disk', 'power', 'nic'] as const;
export type HardwareComponent = (typeof HARDWARE_COMPONENTS)[number];

/** States of an indicator (an LED), as Ironic names them (ironic.common.indicator_states), for the API and the interfaces. */
export const INDICATOR_STATES = ['on', 'off', 'blinking', 'unknown'] as const;
export type IndicatorState = (typeof INDICATOR_STATES)[number];

/**
 * An indicator state as Ironic names it. Its API reference spells the states
 * in capitals (ON, BLINKING) while its code names them in small letters: any
 * case is taken. Throws InvalidParameterValue for anything else.
 */
export function toIndicatorState(value: string): IndicatorState {
  const state = value.toLowerCase() as IndicatorState;
  if (!INDICATOR_STATES.includes(state)) {
    throw new InvalidParameterValue(
      `Invalid indicator state ${value}, expected one of: ${INDICATOR_STATES.join(', ')}.`,
      {
        state: value,
      },
    );
  }
  return state;
}

/** A hardware component by name; InvalidParameterValue for one Ironic does not know. */
export function toHardwareComponent(value: string): HardwareComponent {
  if (!(HARDWARE_COMPONENTS as readonly string[]).includes(value)) {
    throw new InvalidParameterValue(`Invalid component ${value} specified.`, { component: value });
  }
  return value as HardwareComponent;
}
