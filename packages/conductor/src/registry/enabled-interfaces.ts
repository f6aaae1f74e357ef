import { INTERFACE_TYPES, type InterfaceType } from '@bmaas/common';
import { directDeployInterface } from '@bmaas/direct-deploy-interface';
import {
  fakeBootInterface,
  fakeDeployInterface,
  fakeManagementInterface,
  fakePowerInterface,
  noopManagementInterface,
  OPTIONAL_INTERFACES,
} from '@bmaas/driver-api';
import { grubBootInterface } from '@bmaas/grub-boot-interface';
import { ipmitoolManagementInterface, ipmitoolPowerInterface } from '@bmaas/ipmitool-interfaces';
import { ipxeBootInterface } from '@bmaas/ipxe-boot-interface';
import { qemuPowerInterface } from '@bmaas/qemu-power-interface';
import { redfishHttpsBootInterface } from '@bmaas/redfish-https-boot-interface';
import {
  REDFISH_HARDWARE_TYPE,
  redfishBiosInterface,
  redfishFirmwareInterface,
  redfishInspectInterface,
  redfishManagementInterface,
  redfishPowerInterface,
} from '@bmaas/redfish-interfaces';
import { redfishVirtualMediaBootInterface } from '@bmaas/redfish-virtual-media-boot-interface';
import { agentInspectInterface } from '../inspection/agent-inspect.js';
import type { DriverCatalog, InterfaceCatalog } from './catalog.js';

/**
 * Every hardware interface implementation this conductor can load, per kind.
 * `enabled_<kind>_interfaces` picks among them by name. Adding an
 * implementation is one line here.
 */
export const INTERFACES: InterfaceCatalog = {
  boot: [
    fakeBootInterface,
    ipxeBootInterface,
    grubBootInterface,
    redfishVirtualMediaBootInterface,
    redfishHttpsBootInterface,
  ],
  deploy: [fakeDeployInterface, directDeployInterface],
  power: [fakePowerInterface, qemuPowerInterface, ipmitoolPowerInterface, redfishPowerInterface],
  management: [
    fakeManagementInterface,
    ipmitoolManagementInterface,
    redfishManagementInterface,
    noopManagementInterface,
  ],
  // bios, console, firmware, network, raid, rescue, storage, vendor: the generic and fake ones.
  ...OPTIONAL_INTERFACES,
  // In-band inspection: the deploy ramdisk posts its inventory to /v1/continue_inspection.
  inspect: [...OPTIONAL_INTERFACES.inspect, agentInspectInterface, redfishInspectInterface],
  bios: [...OPTIONAL_INTERFACES.bios, redfishBiosInterface],
  firmware: [...OPTIONAL_INTERFACES.firmware, redfishFirmwareInterface],
};

function everyInterface(catalog: InterfaceCatalog): Record<InterfaceType, string[]> {
  const names = {} as Record<InterfaceType, string[]>;
  for (const kind of INTERFACE_TYPES)
    names[kind] = (catalog[kind] ?? OPTIONAL_INTERFACES[kind as never]).map((d) => d.name);
  return names;
}

/** The conductor's catalog: the interfaces above and the hardware types built from them. */
export const DRIVER_CATALOG: DriverCatalog = {
  interfaces: INTERFACES,
  hardwareTypes: [
    // Works with every interface; the fakes come first, so they are its defaults.
    { name: 'fake-hardware', supported: everyInterface(INTERFACES) },
    // Upstream's `ipmi`: a BMC driven by ipmitool; the machine network-boots the deploy ramdisk
    // with any boot interface that declares networkBoot.
    {
      name: 'ipmi',
      supported: {
        deploy: ['direct'],
        power: ['ipmitool'],
        management: ['ipmitool', 'noop'],
        inspect: ['no-inspect', 'agent'],
      },
    },
    // Upstream's `redfish`: a BMC driven through its Redfish service; network boot as `ipmi`.
    REDFISH_HARDWARE_TYPE,
    // Upstream's `manual-management`: a person powers the machine and sets its boot device; deploy waits for it.
    {
      name: 'manual-management',
      supported: {
        deploy: ['direct'],
        power: ['fake'],
        management: ['noop'],
        inspect: ['no-inspect', 'agent'],
      },
    },
  ],
};
