import {
  type HardwareComponent,
  type HealthState,
  type IndicatorState,
  InvalidParameterValue,
  RedfishError,
  UnsupportedDriverExtension,
  VMEDIA_DEVICES,
  type VmediaDevice,
} from '@bmaas/common';
import type { BootDevice, BootDeviceState, ManagementInterface, SupportedIndicators, Task } from '@bmaas/driver-api';
import { bmcName } from './driver-info.js';
import { odataId, type RedfishResource } from './redfish-client.js';
import { RedfishInterfaceBase } from './redfish-interface-base.js';
import { objectAt, RedfishNode, stringsAt } from './redfish-node.js';
import { resetActionOf } from './redfish-power.js';
import { ejectSlot, insertMedia, isInserted, slotsFor, virtualMediaSlots } from './redfish-virtual-media.js';

/** Ironic's boot device → BootSourceOverrideTarget. */
const TARGETS: Readonly<Record<BootDevice, string>> = {
  pxe: 'Pxe',
  disk: 'Hdd',
  cdrom: 'Cd',
  bios: 'BiosSetup',
  safe: 'Hdd',
};
const DEVICES: Readonly<Record<string, BootDevice>> = { Pxe: 'pxe', Hdd: 'disk', Cd: 'cdrom', BiosSetup: 'bios' };
const MODES = { bios: 'Legacy', uefi: 'UEFI' } as const;
const HEALTH: ReadonlySet<string> = new Set(['OK', 'Warning', 'Critical']);
/** IndicatorLED values ↔ Ironic's indicator states. */
const LED_STATES: Readonly<Record<string, IndicatorState>> = { Lit: 'on', Off: 'off', Blinking: 'blinking' };
const LED_VALUES: Readonly<Partial<Record<IndicatorState, string>>> = { on: 'Lit', off: 'Off', blinking: 'Blinking' };

/**
 * Ironic's `redfish` management interface, on the node's ComputerSystem:
 * the next boot device through Boot.BootSourceOverrideTarget and
 * BootSourceOverrideEnabled (Once or Continuous), sent with
 * BootSourceOverrideMode when the node's boot mode is known (some BMCs reset
 * the mode to their default, or refuse the device, when it comes alone);
 * the boot mode, UEFI secure boot (the SecureBoot resource, where the
 * system has one), the system's IndicatorLED, an NMI through
 * ComputerSystem.Reset, and Status.Health.
 */
export class RedfishManagementInterface extends RedfishInterfaceBase implements ManagementInterface {
  /** The devices of BootSourceOverrideTarget@Redfish.AllowableValues Ironic has a name for (all, when none is advertised). */
  async getSupportedBootDevices(task: Task): Promise<BootDevice[]> {
    const { body } = await new RedfishNode(this.deps, task.node).system();
    const allowed = stringsAt(objectAt(body, 'Boot'), 'BootSourceOverrideTarget@Redfish.AllowableValues');
    if (!allowed) return ['pxe', 'disk', 'cdrom', 'bios'];
    return [...new Set(allowed.map((target) => DEVICES[target]).filter((d): d is BootDevice => d !== undefined))];
  }

  async setBootDevice(task: Task, device: BootDevice, persistent: boolean): Promise<void> {
    const node = new RedfishNode(this.deps, task.node);
    const { path, body } = await node.system();
    const target = TARGETS[device];
    if (!target) throw new InvalidParameterValue(`Invalid boot device ${device}.`);
    const allowed = stringsAt(objectAt(body, 'Boot'), 'BootSourceOverrideTarget@Redfish.AllowableValues');
    if (allowed && !allowed.includes(target)) {
      throw new InvalidParameterValue(
        `BMC ${bmcName(node.target)} does not offer boot device ${device} (${target}); it offers ${allowed.join(', ')}.`,
      );
    }
    const boot: RedfishResource = {
      BootSourceOverrideTarget: target,
      BootSourceOverrideEnabled: persistent ? 'Continuous' : 'Once',
    };
    const mode = modeOf(task.node.bootMode);
    if (mode && 'BootSourceOverrideMode' in objectAt(body, 'Boot')) boot.BootSourceOverrideMode = MODES[mode];
    await node.client.patch(node.target, path, { Boot: boot }, etagOf(body));
    task.logger.info('boot device set', { device, persistent, mode, bmc: bmcName(node.target) });
  }

  async getBootDevice(task: Task): Promise<BootDeviceState> {
    const { body } = await new RedfishNode(this.deps, task.node).system();
    const boot = objectAt(body, 'Boot');
    const enabled = boot.BootSourceOverrideEnabled;
    return {
      bootDevice: enabled === 'Disabled' ? null : (DEVICES[String(boot.BootSourceOverrideTarget)] ?? null),
      persistent: enabled === undefined ? null : enabled === 'Continuous',
    };
  }

  /** BootSourceOverrideMode, with the override's target and enabled as they are (some BMCs refuse the mode alone). */
  async setBootMode(task: Task, mode: 'bios' | 'uefi'): Promise<void> {
    const node = new RedfishNode(this.deps, task.node);
    const { path, body } = await node.system();
    const current = objectAt(body, 'Boot');
    if (!('BootSourceOverrideMode' in current)) {
      throw new UnsupportedDriverExtension(task.node.driver, 'management (set_boot_mode: the BMC shows no boot mode)');
    }
    const boot: RedfishResource = { BootSourceOverrideMode: MODES[mode] };
    if (typeof current.BootSourceOverrideTarget === 'string' && current.BootSourceOverrideTarget !== 'None') {
      boot.BootSourceOverrideTarget = current.BootSourceOverrideTarget;
      boot.BootSourceOverrideEnabled = current.BootSourceOverrideEnabled ?? 'Once';
    }
    await node.client.patch(node.target, path, { Boot: boot }, etagOf(body));
    task.logger.info('boot mode set', { mode, bmc: bmcName(node.target) });
  }

  /** The boot mode the BMC shows (BootSourceOverrideMode), null when it shows none. */
  async getBootMode(task: Task): Promise<'bios' | 'uefi' | null> {
    const { body } = await new RedfishNode(this.deps, task.node).system();
    const mode = objectAt(body, 'Boot').BootSourceOverrideMode;
    return mode === 'UEFI' ? 'uefi' : mode === 'Legacy' ? 'bios' : null;
  }

  async setSecureBootState(task: Task, enabled: boolean): Promise<void> {
    const node = new RedfishNode(this.deps, task.node);
    const { body } = await node.system();
    const secureBoot = odataId(body.SecureBoot);
    if (!secureBoot) {
      throw new UnsupportedDriverExtension(
        task.node.driver,
        'management (secure boot: the system has no SecureBoot resource)',
      );
    }
    await node.client.patch(node.target, secureBoot, { SecureBootEnable: enabled });
    task.logger.info('secure boot set', { enabled, bmc: bmcName(node.target) });
  }

  async injectNmi(task: Task): Promise<void> {
    const node = new RedfishNode(this.deps, task.node);
    const { path, body } = await node.system();
    const action = resetActionOf(body, path);
    if (!action.types.includes('Nmi')) {
      throw new RedfishError(
        `BMC ${bmcName(node.target)} offers no Nmi reset type (it offers ${action.types.join(', ')}).`,
      );
    }
    await node.client.post(node.target, action.target, { ResetType: 'Nmi' });
    task.logger.info('NMI injected', { bmc: bmcName(node.target) });
  }

  /**
   * VirtualMedia.InsertMedia of the first slot that takes `device` (a CD or
   * DVD drive for `cdrom`), after EjectMedia of whatever such slots held;
   * nothing when the slot already holds this image.
   */
  async attachVirtualMedia(task: Task, device: VmediaDevice, imageUrl: string): Promise<void> {
    const node = new RedfishNode(this.deps, task.node);
    const outcome = await insertMedia(node, device, imageUrl);
    task.logger.info('virtual media inserted', { device, outcome, bmc: bmcName(node.target) });
  }

  /** VirtualMedia.EjectMedia of every slot of the devices (all when none given) that holds a medium. */
  async detachVirtualMedia(task: Task, devices: readonly VmediaDevice[] = VMEDIA_DEVICES): Promise<void> {
    const node = new RedfishNode(this.deps, task.node);
    const slots = await virtualMediaSlots(node);
    const ejected: string[] = [];
    for (const device of devices) {
      for (const slot of slotsFor(slots, device)) if (await ejectSlot(node, slot)) ejected.push(slot.path);
    }
    if (ejected.length > 0) task.logger.info('virtual media ejected', { slots: ejected, bmc: bmcName(node.target) });
  }

  /** Per device the BMC has a slot for: whether its first such slot holds a medium, and which image (as the fake). */
  async getVirtualMedia(task: Task): Promise<Record<string, unknown>> {
    const slots = await virtualMediaSlots(new RedfishNode(this.deps, task.node));
    const media: Record<string, unknown> = {};
    for (const device of VMEDIA_DEVICES) {
      const [slot] = slotsFor(slots, device);
      if (!slot) continue;
      const image = slot.body.Image;
      media[device] = {
        inserted: isInserted(slot),
        image_url: typeof image === 'string' && image !== '' ? image : null,
      };
    }
    return media;
  }

  async getHealth(task: Task): Promise<HealthState | null> {
    const { body } = await new RedfishNode(this.deps, task.node, task).system();
    const health = objectAt(body, 'Status').Health;
    return typeof health === 'string' && HEALTH.has(health) ? (health as HealthState) : null;
  }

  async getSupportedIndicators(task: Task, component?: HardwareComponent): Promise<SupportedIndicators> {
    if (component !== undefined && component !== 'system') return {};
    const { body } = await new RedfishNode(this.deps, task.node).system();
    if (!('IndicatorLED' in body)) return {};
    return { system: { [indicatorId(body)]: { readonly: false, states: ['off', 'on', 'blinking'] } } };
  }

  async setIndicatorState(
    task: Task,
    component: HardwareComponent,
    indicator: string,
    state: IndicatorState,
  ): Promise<void> {
    const node = new RedfishNode(this.deps, task.node);
    const { path, body } = await node.system();
    this.checkIndicator(body, component, indicator);
    const value = LED_VALUES[state];
    if (!value) throw new InvalidParameterValue(`Indicator ${indicator} cannot be set to ${state}.`);
    await node.client.patch(node.target, path, { IndicatorLED: value }, etagOf(body));
    task.logger.info('indicator set', { indicator, state, bmc: bmcName(node.target) });
  }

  async getIndicatorState(task: Task, component: HardwareComponent, indicator: string): Promise<IndicatorState> {
    const { body } = await new RedfishNode(this.deps, task.node).system();
    this.checkIndicator(body, component, indicator);
    return LED_STATES[String(body.IndicatorLED)] ?? 'unknown';
  }

  private checkIndicator(system: RedfishResource, component: HardwareComponent, indicator: string): void {
    if (component !== 'system' || !('IndicatorLED' in system) || indicator !== indicatorId(system)) {
      throw new InvalidParameterValue(`Node has no indicator ${indicator} on component ${component}.`);
    }
  }
}

/** The id of a system's LED in the API: its Id, as upstream names indicators after their resource. */
function indicatorId(system: RedfishResource): string {
  return typeof system.Id === 'string' ? system.Id : 'system';
}

function modeOf(value: string | null): 'bios' | 'uefi' | undefined {
  return value === 'uefi' || value === 'bios' ? value : undefined;
}

/** The resource's ETag (its @odata.etag), for If-Match. */
export function etagOf(resource: RedfishResource): string | undefined {
  const etag = resource['@odata.etag'];
  return typeof etag === 'string' ? etag : undefined;
}
