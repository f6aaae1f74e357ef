import {
  type BmaasConfig,
  type HardwareInterfaceRecord,
  INTERFACE_TYPES,
  type InterfaceType,
  InvalidParameterValue,
} from '@bmaas/common';
import type { ConductorStore } from '@bmaas/db';

/** The node fields holding each modelled interface. */
export const INTERFACE_FIELDS = {
  boot: 'bootInterface',
  deploy: 'deployInterface',
  power: 'powerInterface',
  management: 'managementInterface',
  inspect: 'inspectInterface',
} as const satisfies Record<InterfaceType, string>;

export type NodeInterfaces = { [K in InterfaceType as (typeof INTERFACE_FIELDS)[K]]: string };

/**
 * Interfaces we do not model: shown with their "nothing here" implementation,
 * as a fake-hardware node in Ironic shows them, so clients see every field.
 */
export const UNMODELLED_INTERFACES: Readonly<Record<string, string>> = {
  bios: 'no-bios',
  console: 'no-console',
  network: 'noop',
  raid: 'no-raid',
  rescue: 'no-rescue',
  storage: 'noop',
  vendor: 'no-vendor',
};

interface TypeInterfaces {
  enabled: Set<string>;
  registeredDefault?: string;
}

/**
 * What the alive conductors registered: per hardware type, the enabled
 * interfaces of each kind and their default. Used to validate a node's
 * driver and interfaces and to fill in the ones it does not name.
 */
export class HardwareTypeCatalog {
  private constructor(
    private readonly types: ReadonlyMap<string, ReadonlyMap<InterfaceType, TypeInterfaces>>,
    private readonly configDefaults: Readonly<Record<InterfaceType, string | null>>,
  ) {}

  static async load(
    conductors: Pick<ConductorStore, 'aliveInterfaces'>,
    config: BmaasConfig,
  ): Promise<HardwareTypeCatalog> {
    const rows = await conductors.aliveInterfaces(config.conductor.heartbeat_timeout);
    return HardwareTypeCatalog.fromRecords(rows, {
      boot: config.DEFAULT.default_boot_interface,
      deploy: config.DEFAULT.default_deploy_interface,
      power: config.DEFAULT.default_power_interface,
      management: config.DEFAULT.default_management_interface,
      inspect: config.DEFAULT.default_inspect_interface,
    });
  }

  static fromRecords(
    rows: readonly HardwareInterfaceRecord[],
    configDefaults: Readonly<Record<InterfaceType, string | null>>,
  ): HardwareTypeCatalog {
    const types = new Map<string, Map<InterfaceType, TypeInterfaces>>();
    for (const row of rows) {
      let kinds = types.get(row.hardwareType);
      if (!kinds) {
        kinds = new Map();
        types.set(row.hardwareType, kinds);
      }
      let kind = kinds.get(row.interfaceType);
      if (!kind) {
        kind = { enabled: new Set() };
        kinds.set(row.interfaceType, kind);
      }
      kind.enabled.add(row.interfaceName);
      if (row.isDefault) kind.registeredDefault = row.interfaceName;
    }
    return new HardwareTypeCatalog(types, configDefaults);
  }

  hardwareTypes(): string[] {
    return [...this.types.keys()].sort();
  }

  has(driver: string): boolean {
    return this.types.has(driver);
  }

  enabled(driver: string, kind: InterfaceType): string[] {
    return [...(this.types.get(driver)?.get(kind)?.enabled ?? [])].sort();
  }

  /** The registered default, else the configured one when the type enables it. */
  defaultFor(driver: string, kind: InterfaceType): string | undefined {
    const entry = this.types.get(driver)?.get(kind);
    if (entry?.registeredDefault) return entry.registeredDefault;
    const configured = this.configDefaults[kind];
    return configured && entry?.enabled.has(configured) ? configured : undefined;
  }

  /**
   * A node's interfaces for `driver`: the requested ones, checked against what
   * is enabled, and defaults for the rest.
   */
  resolve(driver: string, requested: Partial<Record<InterfaceType, string | null>>): NodeInterfaces {
    const resolved: Partial<Record<string, string>> = {};
    for (const kind of INTERFACE_TYPES) {
      const name = requested[kind];
      const enabled = this.types.get(driver)?.get(kind)?.enabled;
      if (name !== undefined && name !== null) {
        if (!enabled?.has(name)) {
          throw new InvalidParameterValue(
            `Could not find the following interface in the 'ironic.hardware.interfaces.${kind}' entrypoint: ${name}. Valid interfaces are ${this.enabled(driver, kind).join(', ') || '(none)'}.`,
          );
        }
        resolved[INTERFACE_FIELDS[kind]] = name;
        continue;
      }
      const fallback = this.defaultFor(driver, kind);
      if (!fallback) {
        throw new InvalidParameterValue(`No default value found for ${kind} interface for node with driver ${driver}.`);
      }
      resolved[INTERFACE_FIELDS[kind]] = fallback;
    }
    return resolved as NodeInterfaces;
  }
}

/**
 * The catalog as node create and patch use it: read at most once per
 * [DEFAULT]hash_ring_reset_interval, like the ring, so enrolling thousands of
 * nodes does not read every conductor's interfaces for each. A refusal from
 * a cached catalog is checked against a fresh read first: a conductor may
 * just have registered the driver or interface.
 */
export class CachedHardwareTypeCatalog {
  private cached: { catalog: HardwareTypeCatalog; readAt: number } | undefined;

  constructor(
    private readonly conductors: Pick<ConductorStore, 'aliveInterfaces'>,
    private readonly config: BmaasConfig,
    private readonly now: () => number = Date.now,
  ) {}

  async resolve(driver: string, requested: Partial<Record<InterfaceType, string | null>>): Promise<NodeInterfaces> {
    const maxAgeMs = this.config.DEFAULT.hash_ring_reset_interval * 1000;
    const cached = this.cached && this.now() - this.cached.readAt < maxAgeMs ? this.cached : undefined;
    if (cached) {
      try {
        return cached.catalog.resolve(driver, requested);
      } catch (error) {
        if (!(error instanceof InvalidParameterValue)) throw error;
      }
    }
    const readAt = this.now();
    const catalog = await HardwareTypeCatalog.load(this.conductors, this.config);
    this.cached = { catalog, readAt };
    return catalog.resolve(driver, requested);
  }
}
