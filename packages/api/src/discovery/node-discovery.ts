import {
  type BmaasConfig,
  ConfigError,
  INTERFACE_TYPES,
  type InspectionData,
  type InterfaceType,
  type Inventory,
  type Logger,
  type NodeRecord,
  ResourceNotFound,
  validInterfaces,
} from '@bmaas/common';
import type { NodeService } from '../node-service.js';

/** Characters a node name may hold (RFC 3986 unreserved); others become "-". */
const NAME_UNSAFE = /[^A-Za-z0-9._~-]+/g;
const TEMPLATE_FIELD = /\{([a-z_]+)\}/g;

/** The fields a [discovery]name_template may use, read from an inventory. */
function nameFields(inventory: Inventory): Record<string, string | undefined> {
  const pxe = validInterfaces(inventory).find((nic) => nic.pxe);
  const text = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);
  return {
    serial: text(inventory.system_vendor?.serial_number),
    bmc_address: text(inventory.bmc_address) ?? text(inventory.bmc_v6address),
    mac: pxe?.mac.replaceAll(':', '-'),
    hostname: text(inventory.hostname),
  };
}

/**
 * A discovered node's name from [discovery]name_template: null without a
 * template, or when a field it uses is missing from the inventory (an
 * unknown field is a configuration error, caught at start).
 */
export function discoveredNodeName(template: string | null, inventory: Inventory): string | null {
  if (!template) return null;
  const fields = nameFields(inventory);
  let missing = false;
  const name = template.replace(TEMPLATE_FIELD, (_, field: string) => {
    const value = fields[field];
    if (value === undefined) missing = true;
    return value ?? '';
  });
  if (missing) return null;
  const safe = name.replace(NAME_UNSAFE, '-').slice(0, 255);
  return safe === '' ? null : safe;
}

/** [discovery]interfaces ("kind:name" pairs) as node fields; ConfigError when malformed. */
export function discoveryInterfaces(pairs: readonly string[]): Partial<Record<InterfaceType, string>> {
  const interfaces: Partial<Record<InterfaceType, string>> = {};
  for (const pair of pairs) {
    const [kind, name, ...rest] = pair.split(':');
    if (!kind || !name || rest.length > 0 || !(INTERFACE_TYPES as readonly string[]).includes(kind)) {
      throw new ConfigError(
        `[discovery]interfaces: "${pair}" is not kind:name with kind one of ${INTERFACE_TYPES.join(', ')}`,
      );
    }
    interfaces[kind as InterfaceType] = name;
  }
  return interfaces;
}

function checkTemplate(template: string | null): void {
  for (const [, field] of (template ?? '').matchAll(TEMPLATE_FIELD)) {
    if (!['serial', 'bmc_address', 'mac', 'hostname'].includes(field as string)) {
      throw new ConfigError(`[discovery]name_template: unknown field {${field}} (serial, bmc_address, mac, hostname)`);
    }
  }
}

/**
 * Discovery's enrolment ([discovery]enabled): an inventory from a machine no
 * port knows becomes a node in enroll with the configured driver and
 * interfaces, a port per NIC (the booting one PXE-enabled) and a name from
 * the template; its conductor then stores the inventory and sets the
 * properties, as inspection does. A MAC already known returns that node.
 */
export class NodeDiscovery {
  private readonly interfaces: Partial<Record<InterfaceType, string>>;

  constructor(
    private readonly config: BmaasConfig['discovery'],
    private readonly nodes: Pick<NodeService, 'enrolDiscovered'>,
  ) {
    this.interfaces = discoveryInterfaces(config.interfaces);
    checkTemplate(config.name_template);
  }

  async enrol(data: InspectionData, logger: Logger): Promise<{ node: NodeRecord; created: boolean }> {
    const nics = validInterfaces(data.inventory);
    if (nics.length === 0) {
      logger.info('continue inspection refused: no-valid-interface', { reason: 'no-valid-interface' });
      throw new ResourceNotFound();
    }
    const name = discoveredNodeName(this.config.name_template, data.inventory);
    const { node, created } = await this.nodes.enrolDiscovered(
      { driver: this.config.driver, name, interfaces: this.interfaces },
      nics,
    );
    if (created) {
      logger.info('discovery: node enrolled', { nodeUuid: node.uuid, name: node.name, macs: nics.map((n) => n.mac) });
    }
    return { node, created };
  }
}
