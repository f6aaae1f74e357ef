import type { InterfaceType } from '@bmaas/common';
import {
  fakeBootInterface,
  fakeDeployInterface,
  fakeInspectInterface,
  fakeManagementInterface,
  fakePowerInterface,
  noInspectInterface,
} from '@bmaas/driver-api';
import { ipxeBootInterface } from '@bmaas/ipxe-boot-interface';
import { qemuPowerInterface } from '@bmaas/qemu-power-interface';
import { directDeployInterface } from '../deploy/direct-deploy.js';
import { agentInspectInterface } from '../inspection/agent-inspect.js';
import type { DriverCatalog, InterfaceCatalog } from './catalog.js';

/**
 * Every hardware interface implementation this conductor can load, per kind.
 * `enabled_<kind>_interfaces` picks among them by name. Adding an
 * implementation is one line here.
 */
export const INTERFACES: InterfaceCatalog = {
  boot: [fakeBootInterface, ipxeBootInterface],
  deploy: [fakeDeployInterface, directDeployInterface],
  power: [fakePowerInterface, qemuPowerInterface],
  management: [fakeManagementInterface],
  inspect: [fakeInspectInterface, noInspectInterface, agentInspectInterface],
};

function everyInterface(catalog: InterfaceCatalog): Record<InterfaceType, string[]> {
  return {
    boot: catalog.boot.map((d) => d.name),
    deploy: catalog.deploy.map((d) => d.name),
    power: catalog.power.map((d) => d.name),
    management: catalog.management.map((d) => d.name),
    inspect: catalog.inspect.map((d) => d.name),
  };
}

/** The conductor's catalog: the interfaces above and the hardware types built from them. */
export const DRIVER_CATALOG: DriverCatalog = {
  interfaces: INTERFACES,
  hardwareTypes: [
    // Works with every interface; the fakes come first, so they are its defaults.
    { name: 'fake-hardware', supported: everyInterface(INTERFACES) },
  ],
};
