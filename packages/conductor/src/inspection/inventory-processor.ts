import { randomUUID } from 'node:crypto';
import { type InspectionData, MACAlreadyExists, validInterfaces } from '@bmaas/common';
import type { InventoryStore, PortStore } from '@bmaas/db';
import type { ConductorTask } from '../task-manager.js';
import {
  type InspectorConfig,
  interfacesToAdd,
  portsToDelete,
  propertiesFromInventory,
} from './inventory-processing.js';
import type { InspectionRuleApplier } from './rule-application.js';

export interface InventoryProcessorDeps {
  ports: Pick<PortStore, 'create' | 'listByNode' | 'destroy'>;
  inventories: Pick<InventoryStore, 'save'>;
  /** [inspector] options. */
  config: InspectorConfig;
  /** The inspection rules, applied once the inventory is processed (absent: none, in tests of other concerns). */
  rules?: InspectionRuleApplier;
}

/**
 * What the conductor does with an inventory, for in-band inspection and for
 * discovered nodes alike: properties first (a bad inventory fails before
 * anything is written), then the inventory is stored, missing ports created
 * ([inspector]add_ports) and unwanted ones deleted ([inspector]keep_ports).
 * Then the inspection rules run, and the inventory is stored with the
 * plugin data they left. Runs under the node's exclusive lock.
 */
export class InventoryProcessor {
  constructor(private readonly deps: InventoryProcessorDeps) {}

  async process(task: ConductorTask, data: InspectionData): Promise<void> {
    const { node } = task;
    const properties = propertiesFromInventory(data.inventory, node);

    const nics = validInterfaces(data.inventory);
    const wanted = interfacesToAdd(nics, this.deps.config.add_ports);
    const existing = await this.deps.ports.listByNode(node.id);
    const known = new Set(existing.map((port) => port.address));
    const created: string[] = [];
    for (const nic of wanted) {
      if (known.has(nic.mac)) continue;
      try {
        await this.deps.ports.create({ uuid: randomUUID(), address: nic.mac, nodeId: node.id, pxeEnabled: nic.pxe });
        created.push(nic.mac);
      } catch (error) {
        if (!(error instanceof MACAlreadyExists)) throw error;
        task.logger.warn('inspection: MAC belongs to another node, no port created', { mac: nic.mac, nic: nic.name });
      }
    }
    const deleted: string[] = [];
    for (const address of portsToDelete(existing, nics, wanted, this.deps.config.keep_ports)) {
      const port = existing.find((p) => p.address === address);
      if (port && (await this.deps.ports.destroy(port.id))) deleted.push(address);
    }
    await task.updateNode({ properties });
    const pluginData = this.deps.rules
      ? await this.deps.rules.apply(task, data.inventory as Record<string, unknown>, data.pluginData ?? {})
      : data.pluginData;
    await this.deps.inventories.save(node.id, data.inventory, pluginData);
    task.logger.info('inventory processed', {
      cpus: properties.cpus,
      memoryMb: properties.memory_mb,
      localGb: properties.local_gb,
      cpuArch: properties.cpu_arch,
      portsCreated: created,
      portsDeleted: deleted,
    });
  }
}
