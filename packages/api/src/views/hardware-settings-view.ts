import type { BiosSetting, FirmwareComponent } from '@bmaas/common';
import type { Timed } from '@bmaas/db';
import { selfAndBookmark } from '../links.js';
import { Minor } from '../versions.js';
import { timestamp } from './format.js';

/** A cached BIOS setting as Ironic shows it: name, value, times and links; the registry fields with `detail` (1.74). */
export function biosSettingView(
  setting: Timed<BiosSetting>,
  nodeUuid: string,
  baseUrl: string,
  detail: boolean,
): Record<string, unknown> {
  const view: Record<string, unknown> = {
    name: setting.name,
    value: setting.value,
    created_at: timestamp(setting.createdAt),
    updated_at: timestamp(setting.updatedAt),
    links: selfAndBookmark(baseUrl, 'nodes', `${nodeUuid}/bios/${encodeURIComponent(setting.name)}`),
  };
  if (!detail) return view;
  return {
    ...view,
    attribute_type: setting.attributeType,
    allowable_values: setting.allowableValues,
    lower_bound: setting.lowerBound,
    max_length: setting.maxLength,
    min_length: setting.minLength,
    read_only: setting.readOnly,
    reset_required: setting.resetRequired,
    unique: setting.unique,
    upper_bound: setting.upperBound,
  };
}

/** A cached firmware component as Ironic shows it (1.86); vendor, model and serial_number from 1.114. */
export function firmwareComponentView(component: Timed<FirmwareComponent>, minor: number): Record<string, unknown> {
  return {
    component: component.component,
    initial_version: component.initialVersion,
    current_version: component.currentVersion,
    last_version_flashed: component.lastVersionFlashed,
    created_at: timestamp(component.createdAt),
    updated_at: timestamp(component.updatedAt),
    ...(minor >= Minor.FIRMWARE_IDENTITY
      ? { vendor: component.vendor, model: component.model, serial_number: component.serialNumber }
      : {}),
  };
}
