import {
  type BmaasConfig,
  type HardwareInterfaceRecord,
  INTERFACE_TYPES,
  type InterfaceType,
  InvalidParameterValue,
  OPTIONAL_INTERFACE_GENERIC,
  type OptionalInterfaceType,
} from '@bmaas/common';
import type { ConductorStore } from '@bmaas/db';

/** The node field holding each interface kind (`bootInterface`, …, `vendorInterface`). */
export const INTERFACE_FIELDS = Object.fromEntries(INTERFACE_TYPES.map((kind) => [kind, `${kind}Interface`])) as {
  readonly [K in InterfaceType]: `${K}Interface`;
};

export type NodeInterfaces = { [K in InterfaceType as `${K}Interface`]: string };

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
    const defaults = {} as Record<InterfaceType, string | null>;
    for (const kind of INTERFACE_TYPES) defaults[kind] = config.DEFAULT[`default_${kind}_interface`];
    return HardwareTypeCatalog.fromRecords(rows, defaults);
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

  /**
   * The registered default, else the configured one when the type enables it.
   * An optional kind no conductor registered for the type (conductors older
   * than the kind) gets its generic implementation.
   */
  defaultFor(driver: string, kind: InterfaceType): string | undefined {
    const entry = this.types.get(driver)?.get(kind);
    if (entry?.registeredDefault) return entry.registeredDefault;
    const configured = this.configDefaults[kind];
    if (configured && entry?.enabled.has(configured)) return configured;
    return this.unregisteredGeneric(driver, kind);
  }

  /** The generic implementation of an optional kind no conductor registered for the type (older conductors). */
  private unregisteredGeneric(driver: string, kind: InterfaceType): string | undefined {
    if (!(kind in OPTIONAL_INTERFACE_GENERIC) || !this.types.has(driver) || this.types.get(driver)?.has(kind)) {
      return undefined;
    }
    return OPTIONAL_INTERFACE_GENERIC[kind as OptionalInterfaceType];
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
        if (!enabled?.has(name) && name !== this.unregisteredGeneric(driver, kind)) {
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
