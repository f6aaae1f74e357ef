import type { AgentCommandObserver } from '@bmaas/agent-client';
import {
  type BmaasConfig,
  BootConfigNotFound,
  ConfigError,
  DriverNotFound,
  INTERFACE_TYPES,
  type InterfaceType,
  InvalidParameterValue,
  type Logger,
  type NodeRecord,
  OPTIONAL_INTERFACE_GENERIC,
  type OptionalInterfaceType,
  pluginSection,
  type SectionSchema,
} from '@bmaas/common';
import type { ConductorRegistration } from '@bmaas/db';
import {
  type BootFileSettings,
  type BootInterface,
  type BootInterfaceDescriptor,
  DISCOVERY_NODE,
  type InstanceImages,
  type InterfaceDescriptor,
  type NodeDriver,
  OPTIONAL_INTERFACES,
} from '@bmaas/driver-api';
import { InstanceImageCache, instanceImageCacheSettingsOf } from '@bmaas/image-cache';
import { type PowerActionObserver, RecordedPowerInterface } from '../metrics/recorded-power.js';
import type { DriverCatalog, HardwareTypeDescriptor, InterfaceKinds } from './catalog.js';

/** A hardware type as this conductor enabled it. */
interface EnabledHardwareType {
  name: string;
  /** Enabled interface names per kind, the default first. */
  interfaces: Record<InterfaceType, string[]>;
}

type InterfaceInstances = { [K in InterfaceType]: Map<string, InterfaceKinds[K]> };

export interface DriverRegistryDeps {
  config: BmaasConfig;
  logger: Logger;
  /** Registered hostname of this conductor. */
  conductorHostname: string;
  /** Handed to every interface: hears of agent commands that did not succeed. */
  agentCommands?: AgentCommandObserver | undefined;
  /** Handed to every interface: the conductor's instance image cache (made from the configuration when absent). */
  instanceImages?: InstanceImages | undefined;
  /** When set, every power interface is handed out wrapped so that its power changes are reported. */
  powerActions?: PowerActionObserver | undefined;
}

const NODE_FIELD = Object.fromEntries(INTERFACE_TYPES.map((kind) => [kind, `${kind}Interface`])) as {
  [K in InterfaceType]: `${K}Interface`;
};

/**
 * What a hardware type supports of a kind. Boot left out: every boot
 * interface that declares itself a network boot or names the hardware type
 * in its `hardwareTypes`; an optional kind left out:
 * only the generic implementation.
 */
function supportedOf(
  catalog: DriverCatalog,
  descriptor: HardwareTypeDescriptor,
  kind: InterfaceType,
): readonly string[] {
  const named = (descriptor.supported as Partial<Record<InterfaceType, readonly string[]>>)[kind];
  if (named) return named;
  if (kind === 'boot') {
    const takes = (d: BootInterfaceDescriptor) => d.networkBoot || d.hardwareTypes?.includes(descriptor.name);
    return catalog.interfaces.boot.filter(takes).map((d) => d.name);
  }
  return [OPTIONAL_INTERFACE_GENERIC[kind as OptionalInterfaceType]];
}

function duplicateOf(names: readonly string[]): string | undefined {
  return names.find((name, index) => names.indexOf(name) !== index);
}

/**
 * The hardware types and interfaces this conductor enabled, created once at
 * start from the catalog and [DEFAULT]enabled_* / default_*_interface. Any
 * unknown or duplicate name, or a default that is not enabled, is a
 * ConfigError: the conductor refuses to start.
 */
export class DriverRegistry {
  private readonly drivers = new Map<string, NodeDriver>();

  private constructor(
    private readonly hardwareTypes: ReadonlyMap<string, EnabledHardwareType>,
    private readonly instances: InterfaceInstances,
    /** Descriptors of the enabled boot interfaces, in enabled order. */
    readonly bootDescriptors: readonly BootInterfaceDescriptor[],
  ) {}

  static create(catalog: DriverCatalog, registryDeps: DriverRegistryDeps): DriverRegistry {
    const { config } = registryDeps;
    // one instance image cache per conductor, whichever interfaces use it
    const deps: DriverRegistryDeps = {
      ...registryDeps,
      instanceImages:
        registryDeps.instanceImages ??
        new InstanceImageCache(
          instanceImageCacheSettingsOf(config),
          registryDeps.logger.child({ component: 'instance-image-cache' }),
        ),
    };
    const instances = {} as InterfaceInstances;
    for (const kind of INTERFACE_TYPES) {
      instances[kind] = createEnabled(catalog, kind, deps) as never;
    }
    const { powerActions } = deps;
    if (powerActions) {
      instances.power = new Map(
        [...instances.power].map(([name, power]) => [name, new RecordedPowerInterface(power, name, powerActions)]),
      );
    }

    const knownTypes = catalog.hardwareTypes.map((h) => h.name);
    const catalogDuplicate = duplicateOf(knownTypes);
    if (catalogDuplicate) throw new ConfigError(`hardware type "${catalogDuplicate}" is registered twice`);
    const enabledTypes = config.DEFAULT.enabled_hardware_types;
    if (enabledTypes.length === 0) throw new ConfigError('[DEFAULT]enabled_hardware_types: no hardware type enabled');
    const duplicate = duplicateOf(enabledTypes);
    if (duplicate) throw new ConfigError(`[DEFAULT]enabled_hardware_types: "${duplicate}" is listed twice`);

    const hardwareTypes = new Map<string, EnabledHardwareType>();
    for (const name of enabledTypes) {
      const descriptor = catalog.hardwareTypes.find((h) => h.name === name);
      if (!descriptor) {
        throw new ConfigError(
          `[DEFAULT]enabled_hardware_types: unknown hardware type "${name}" (known: ${knownTypes.join(', ')})`,
        );
      }
      const interfaces = {} as Record<InterfaceType, string[]>;
      for (const kind of INTERFACE_TYPES) {
        const supported = supportedOf(catalog, descriptor, kind);
        const usable = supported.filter((n) => instances[kind].has(n));
        if (usable.length === 0) {
          throw new ConfigError(
            `hardware type "${name}" supports none of the enabled ${kind} interfaces ` +
              `(enabled: ${[...instances[kind].keys()].join(', ')}; supported: ${supported.join(', ')})`,
          );
        }
        const wanted = defaultOption(config, kind);
        const preferred = wanted !== null && usable.includes(wanted) ? wanted : (usable[0] as string);
        interfaces[kind] = [preferred, ...usable.filter((n) => n !== preferred)];
      }
      hardwareTypes.set(name, { name, interfaces });
    }
    const bootDescriptors = [...instances.boot.keys()].map(
      (name) => catalog.interfaces.boot.find((d) => d.name === name) as BootInterfaceDescriptor,
    );
    return new DriverRegistry(hardwareTypes, instances, bootDescriptors);
  }

  /** Closes every enabled interface that holds something (BMC sessions), when the conductor stops. */
  async close(logger: Logger): Promise<void> {
    for (const kind of INTERFACE_TYPES) {
      for (const [name, instance] of this.instances[kind]) {
        const closable = instance as { close?: () => Promise<void> };
        if (!closable.close) continue;
        try {
          await closable.close();
        } catch (error) {
          logger.warn('interface not closed', { kind, name, error: (error as Error).message });
        }
      }
    }
  }

  /** Every enabled boot interface, for the work they do once at start. */
  enabledBootInterfaces(): BootInterface[] {
    return [...this.instances.boot.values()];
  }

  /**
   * The discovery configuration `name` of the first enabled boot interface
   * whose descriptor lists it: what a machine no node has boots. Throws
   * BootConfigNotFound when none does, or the interface renders nothing.
   */
  discoveryConfig(name: string): Promise<string> {
    const descriptor = this.bootDescriptors.find((d) => d.discoveryConfigNames.includes(name));
    const boot = descriptor && this.instances.boot.get(descriptor.name);
    if (!boot) return Promise.reject(new BootConfigNotFound(DISCOVERY_NODE, name.slice(0, 64)));
    return boot.getDiscoveryConfig(name);
  }

  /** Names of the enabled hardware types. */
  hardwareTypeNames(): string[] {
    return [...this.hardwareTypes.keys()];
  }

  /** What the conductor registers: every enabled interface per hardware type, its default flagged. */
  registrationInterfaces(): ConductorRegistration['interfaces'] {
    return [...this.hardwareTypes.values()].flatMap((hw) =>
      INTERFACE_TYPES.flatMap((kind) =>
        hw.interfaces[kind].map((interfaceName, index) => ({
          hardwareType: hw.name,
          interfaceType: kind,
          interfaceName,
          isDefault: index === 0,
        })),
      ),
    );
  }

  /** What the default interfaces of a hardware type read from driver_info, key -> description (merged). */
  propertiesOf(hardwareType: string): Record<string, string> {
    const hw = this.hardwareTypes.get(hardwareType);
    if (!hw) throw new DriverNotFound(hardwareType);
    const properties: Record<string, string> = {};
    for (const kind of INTERFACE_TYPES) {
      const instance = this.instances[kind].get(hw.interfaces[kind][0] as string);
      Object.assign(properties, instance?.getProperties());
    }
    return properties;
  }

  /**
   * The interface instances a node names. DriverNotFound when its hardware
   * type is not enabled here; InvalidParameterValue when one of its
   * *_interface fields names an interface not enabled for that type.
   */
  driverFor(node: Pick<NodeRecord, 'uuid' | 'driver' | `${InterfaceType}Interface`>): NodeDriver {
    let key = node.driver;
    for (const kind of INTERFACE_TYPES) key += `\0${node[NODE_FIELD[kind]]}`;
    const cached = this.drivers.get(key);
    if (cached) return cached;
    const hw = this.hardwareTypes.get(node.driver);
    if (!hw) throw new DriverNotFound(node.driver);
    for (const kind of INTERFACE_TYPES) {
      const name = node[NODE_FIELD[kind]];
      if (!hw.interfaces[kind].includes(name)) {
        throw new InvalidParameterValue(
          `Node ${node.uuid}: ${kind}_interface "${name}" is not enabled for hardware type ${hw.name} ` +
            `(enabled: ${hw.interfaces[kind].join(', ')}).`,
          { node: node.uuid, interfaceType: kind, interfaceName: name },
        );
      }
    }
    const driver = {} as Record<InterfaceType, unknown>;
    for (const kind of INTERFACE_TYPES) driver[kind] = this.instances[kind].get(node[NODE_FIELD[kind]]);
    this.drivers.set(key, driver as unknown as NodeDriver);
    return driver as unknown as NodeDriver;
  }
}

function defaultOption(config: BmaasConfig, kind: InterfaceType): string | null {
  return config.DEFAULT[`default_${kind}_interface`];
}

function createEnabled<K extends InterfaceType>(
  catalog: DriverCatalog,
  kind: K,
  deps: DriverRegistryDeps,
): Map<string, InterfaceKinds[K]> {
  const descriptors = (catalog.interfaces[kind] ??
    OPTIONAL_INTERFACES[kind as OptionalInterfaceType]) as readonly InterfaceDescriptor<InterfaceKinds[K]>[];
  const known = descriptors.map((d) => d.name);
  const catalogDuplicate = duplicateOf(known);
  if (catalogDuplicate) throw new ConfigError(`${kind} interface "${catalogDuplicate}" is registered twice`);

  const option = `[DEFAULT]enabled_${kind}_interfaces`;
  const enabled: readonly string[] = deps.config.DEFAULT[`enabled_${kind as InterfaceType}_interfaces`];
  if (enabled.length === 0) throw new ConfigError(`${option}: no ${kind} interface enabled`);
  const duplicate = duplicateOf(enabled);
  if (duplicate) throw new ConfigError(`${option}: "${duplicate}" is listed twice`);
  const wanted = defaultOption(deps.config, kind);
  if (wanted !== null && !enabled.includes(wanted)) {
    throw new ConfigError(
      `[DEFAULT]default_${kind}_interface: "${wanted}" is not in enabled_${kind}_interfaces (${enabled.join(', ')})`,
    );
  }

  const instances = new Map<string, InterfaceKinds[K]>();
  for (const name of enabled) {
    const descriptor = descriptors.find((d) => d.name === name);
    if (!descriptor) {
      throw new ConfigError(`${option}: unknown ${kind} interface "${name}" (known: ${known.join(', ')})`);
    }
    instances.set(
      name,
      descriptor.create({
        settings: settingsOf(descriptor, deps.config),
        coreSettings: coreSettingsOf(descriptor, deps.config),
        deploy: bootFileSettingsOf(deps.config),
        discovery: deps.config.discovery,
        apiPublicEndpoint: deps.config.api.public_endpoint,
        inspectionCallbackEndpoint: deps.config.inspector.callback_endpoint_override ?? deps.config.api.public_endpoint,
        fileUrlAllowedPaths: deps.config.conductor.file_url_allowed_paths,
        powerStateChangeTimeout: deps.config.conductor.power_state_change_timeout,
        logger: deps.logger.child({ component: `${kind}:${name}` }),
        conductorHostname: deps.conductorHostname,
        agentCommands: deps.agentCommands,
        instanceImages: deps.instanceImages,
      }),
    );
  }
  return instances;
}

/**
 * The settings made for each section object of a configuration: descriptors
 * that declare the same section object (a package's power and management
 * interfaces, say) get the same frozen settings, which their package keys
 * its one per-conductor client or runner on (so requests to one BMC share
 * one limit and session whichever interface sends them).
 */
const sharedSettings = new WeakMap<BmaasConfig, WeakMap<object, Readonly<Record<string, unknown>>>>();

/** The options the descriptor declares in its section, resolved; a ConfigError when it was loaded without them. */
function settingsOf(descriptor: InterfaceDescriptor<unknown>, config: BmaasConfig): Readonly<Record<string, unknown>> {
  if (!descriptor.config) return {};
  let byConfig = sharedSettings.get(config);
  if (!byConfig) {
    byConfig = new WeakMap();
    sharedSettings.set(config, byConfig);
  }
  const known = byConfig.get(descriptor.config);
  if (known) return known;
  const made = resolvedSettings(descriptor, config);
  byConfig.set(descriptor.config, made);
  return made;
}

function resolvedSettings(
  descriptor: InterfaceDescriptor<unknown>,
  config: BmaasConfig,
): Readonly<Record<string, unknown>> {
  if (!descriptor.config) return {};
  const { section, options } = descriptor.config;
  const settings = declaredValues(descriptor, config, section, options);
  for (const [option, from] of Object.entries(descriptor.config.fallbacks ?? {})) {
    if (settings[option] !== null || from === undefined) continue;
    settings[option] = (pluginSection(config, from) as Record<string, unknown>)[option] ?? null;
  }
  return Object.freeze(settings);
}

/** The options the descriptor adds to core sections, by section. */
function coreSettingsOf(
  descriptor: InterfaceDescriptor<unknown>,
  config: BmaasConfig,
): Readonly<Record<string, never>> {
  const settings: Record<string, unknown> = {};
  for (const [section, options] of Object.entries(descriptor.coreOptions ?? {})) {
    settings[section] = Object.freeze(declaredValues(descriptor, config, section, options));
  }
  return Object.freeze(settings) as Readonly<Record<string, never>>;
}

/** The values of just the options declared, out of a section shared with the core or not. */
function declaredValues(
  descriptor: InterfaceDescriptor<unknown>,
  config: BmaasConfig,
  section: string,
  options: SectionSchema,
): Record<string, unknown> {
  const loaded = pluginSection<Record<string, unknown>>(config, section) as Record<string, unknown>;
  const values: Record<string, unknown> = {};
  for (const option of Object.keys(options)) {
    if (!Object.hasOwn(loaded, option)) {
      const what = Object.hasOwn(config, section) ? `[${section}]${option}` : `[${section}]`;
      throw new ConfigError(
        `${what} of interface "${descriptor.name}" is not in the configuration (load it with loadConductorConfig)`,
      );
    }
    values[option] = loaded[option];
  }
  return values;
}

/** The boot file options of [deploy] an interface may use, and none of the file server's. */
function bootFileSettingsOf(config: BmaasConfig): BootFileSettings {
  const { http_root, http_url, boot_config_cache_bytes, boot_config_cache_check_interval } = config.deploy;
  return Object.freeze({ http_root, http_url, boot_config_cache_bytes, boot_config_cache_check_interval });
}
