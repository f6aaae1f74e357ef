import {
  type HardwareComponent,
  type HealthState,
  type IndicatorState,
  InvalidParameterValue,
  VMEDIA_DEVICES,
  type VmediaDevice,
} from '@bmaas/common';
import type {
  BootDevice,
  BootDeviceState,
  InterfaceDescriptor,
  ManagementInterface,
  SupportedIndicators,
} from '../interfaces.js';
import type { Task } from '../task.js';
import { fakeIndicatorState, fakeSupportedIndicators, setFakeIndicatorState } from './fake-indicators.js';

/** pxe and disk, and cdrom: the fake has virtual media, which a boot interface may boot (redfish-virtual-media). */
const FAKE_BOOT_DEVICES: readonly BootDevice[] = ['pxe', 'disk', 'cdrom'];
/** driver_info key of the health the fake BMC reports (OK when absent). */
export const FAKE_HEALTH_KEY = 'fake_health';
const HEALTH_STATES: readonly HealthState[] = ['OK', 'Warning', 'Critical'];
const NMI_COUNT_KEY = 'fake_nmi_count';
/** driver_internal_info key of the attached virtual media: device -> image URL. */
export const FAKE_VMEDIA_KEY = 'fake_vmedia';

/** Management that remembers the boot device, NMIs, virtual media and indicator states in driver_internal_info. */
export class FakeManagementInterface implements ManagementInterface {
  getProperties(): Record<string, string> {
    return {};
  }

  async validate(task: Task): Promise<void> {
    fakeHealth(task);
  }

  /** driver_info `fake_health` (OK, Warning or Critical), OK when absent: what a test or a demo wants the BMC to say. */
  async getHealth(task: Task): Promise<HealthState | null> {
    return fakeHealth(task);
  }

  async getSupportedBootDevices(_task: Task): Promise<BootDevice[]> {
    return [...FAKE_BOOT_DEVICES];
  }

  /** Recorded with the task's next write or the release of its lock (writeWithNext), as fake power's state. */
  async setBootDevice(task: Task, device: BootDevice, persistent: boolean): Promise<void> {
    if (!FAKE_BOOT_DEVICES.includes(device)) {
      throw new InvalidParameterValue(`Invalid boot device ${device}, supported: ${FAKE_BOOT_DEVICES.join(', ')}.`);
    }
    task.writeWithNext({
      driverInternalInfo: { ...task.node.driverInternalInfo, fake_boot_device: { device, persistent } },
    });
  }

  async getBootDevice(task: Task): Promise<BootDeviceState> {
    const stored = task.node.driverInternalInfo.fake_boot_device as { device?: BootDevice; persistent?: boolean };
    return { bootDevice: stored?.device ?? null, persistent: stored?.persistent ?? null };
  }

  async injectNmi(task: Task): Promise<void> {
    const count = Number(task.node.driverInternalInfo[NMI_COUNT_KEY] ?? 0);
    await task.updateNode({ driverInternalInfo: { ...task.node.driverInternalInfo, [NMI_COUNT_KEY]: count + 1 } });
  }
  /** Any boot mode, as Ironic's fake management supports both. */
  async setBootMode(_task: Task, _mode: 'bios' | 'uefi'): Promise<void> {}

  async setSecureBootState(_task: Task, _enabled: boolean): Promise<void> {}

  async attachVirtualMedia(task: Task, device: VmediaDevice, imageUrl: string): Promise<void> {
    await this.saveVmedia(task, { ...attachedMedia(task), [device]: imageUrl });
  }

  async detachVirtualMedia(task: Task, devices: readonly VmediaDevice[] = VMEDIA_DEVICES): Promise<void> {
    const media = attachedMedia(task);
    for (const device of devices) delete media[device];
    await this.saveVmedia(task, media);
  }

  async getVirtualMedia(task: Task): Promise<Record<string, unknown>> {
    const media = attachedMedia(task);
    return Object.fromEntries(
      VMEDIA_DEVICES.map((device) => [
        device,
        { inserted: media[device] !== undefined, image_url: media[device] ?? null },
      ]),
    );
  }

  async getSupportedIndicators(_task: Task, component?: HardwareComponent): Promise<SupportedIndicators> {
    return fakeSupportedIndicators(component);
  }

  async getIndicatorState(task: Task, component: HardwareComponent, indicator: string): Promise<IndicatorState> {
    return fakeIndicatorState(task, component, indicator);
  }

  async setIndicatorState(
    task: Task,
    component: HardwareComponent,
    indicator: string,
    state: IndicatorState,
  ): Promise<void> {
    await setFakeIndicatorState(task, component, indicator, state);
  }

  private async saveVmedia(task: Task, media: Record<string, string>): Promise<void> {
    await task.updateNode({ driverInternalInfo: { ...task.node.driverInternalInfo, [FAKE_VMEDIA_KEY]: media } });
  }
}

function fakeHealth(task: Task): HealthState {
  const value = task.node.driverInfo[FAKE_HEALTH_KEY];
  if (value === undefined || value === null) return 'OK';
  if (!HEALTH_STATES.includes(value as HealthState)) {
    throw new InvalidParameterValue(
      `driver_info ${FAKE_HEALTH_KEY} must be one of ${HEALTH_STATES.join(', ')}, not ${JSON.stringify(value)}.`,
    );
  }
  return value as HealthState;
}

function attachedMedia(task: Task): Record<string, string> {
  const stored = task.node.driverInternalInfo[FAKE_VMEDIA_KEY];
  return typeof stored === 'object' && stored !== null ? { ...(stored as Record<string, string>) } : {};
}

export const fakeManagementInterface: InterfaceDescriptor<ManagementInterface> = {
  name: 'fake',
  create: () => new FakeManagementInterface(),
};
