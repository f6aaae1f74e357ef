import type { FirmwareComponent } from '@bmaas/common';
import type { FirmwareInterface, Task } from '@bmaas/driver-api';
import { odataId, type RedfishResource } from './redfish-client.js';
import { RedfishInterfaceBase } from './redfish-interface-base.js';
import { RedfishNode } from './redfish-node.js';

/**
 * Ironic's `redfish` firmware interface, read-only here: the components of
 * the UpdateService's FirmwareInventory (each SoftwareInventory member with
 * a Version: its Id, Version, Manufacturer, Model and SerialNumber where
 * given), cached by the conductor for /v1/nodes/{id}/firmware. Ironic names
 * the system firmware `bios` and the BMC's `bmc`: members whose Id says so
 * are named that way. Updating firmware is not offered.
 */
export class RedfishFirmwareInterface extends RedfishInterfaceBase implements FirmwareInterface {
  async getComponents(task: Task): Promise<FirmwareComponent[]> {
    const node = new RedfishNode(this.deps, task.node);
    const root = await node.client.get(node.target, node.target.rootPrefix);
    const updateServicePath = odataId(root.UpdateService);
    if (!updateServicePath) return [];
    const updateService = await node.client.get(node.target, updateServicePath);
    const inventoryPath = odataId(updateService.FirmwareInventory);
    if (!inventoryPath) return [];
    const members = await node.client.members(node.target, inventoryPath);
    return members
      .filter((member) => typeof member.Version === 'string' && member.Version !== '')
      .map((member) => ({
        component: componentName(member),
        initialVersion: member.Version as string,
        currentVersion: member.Version as string,
        lastVersionFlashed: null,
        vendor: stringOrNull(member.Manufacturer),
        model: stringOrNull(member.Model),
        serialNumber: stringOrNull(member.SerialNumber),
      }));
  }
}

function componentName(member: RedfishResource): string {
  const id = String(member.Id ?? member.Name ?? '');
  if (/^(bios|system[-_ ]?firmware)$/i.test(id)) return 'bios';
  if (/^(bmc|manager|bmc[-_ ]?firmware)$/i.test(id)) return 'bmc';
  return id;
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}
