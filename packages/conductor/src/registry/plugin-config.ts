import {
  type BmaasConfig,
  ConfigError,
  configSchema,
  INTERFACE_TYPES,
  type LoadConfigOptions,
  loadConfig,
  type OptionSchema,
  type PluginDefaults,
  renderConfigReference,
  type SectionSchema,
} from '@bmaas/common';
import type { DriverCatalog } from './catalog.js';
import { DRIVER_CATALOG } from './enabled-interfaces.js';

/**
 * The configuration the catalog's descriptors declare, by section: their own
 * sections, and the options they add to core sections. Two descriptors
 * claiming one section, or one option of a core section, is a ConfigError,
 * unless they declare the very same schema object: interfaces sharing one
 * package's options, of one kind or several (a package's power and
 * management interfaces, or two boot interfaces of one vendor's BMC).
 */
export function pluginConfigSections(catalog: DriverCatalog = DRIVER_CATALOG): Record<string, SectionSchema> {
  const sections: Record<string, Record<string, OptionSchema>> = {};
  const owners = new Map<string, { owner: string; options: SectionSchema }>();
  const claim = (key: string, owner: { owner: string; options: SectionSchema }): boolean => {
    const other = owners.get(key);
    if (other && other.options === owner.options) return false;
    if (other) throw new ConfigError(`${key} is claimed by ${other.owner} and by ${owner.owner}`);
    owners.set(key, owner);
    return true;
  };
  for (const kind of INTERFACE_TYPES) {
    for (const descriptor of catalog.interfaces[kind] ?? []) {
      const declared = [
        ...(descriptor.config ? [[descriptor.config.section, descriptor.config.options] as const] : []),
        ...Object.entries(descriptor.coreOptions ?? {}),
      ];
      for (const [section, options] of declared) {
        const owner = { owner: `${kind} interface "${descriptor.name}"`, options };
        if (!Object.hasOwn(configSchema, section)) {
          if (claim(`[${section}]`, owner)) sections[section] = { ...options };
          continue;
        }
        // A core section: each option has one owner, the core or one plug-in.
        for (const [option, schema] of Object.entries(options)) {
          if (!claim(`[${section}]${option}`, owner)) continue;
          sections[section] ??= {};
          (sections[section] as Record<string, OptionSchema>)[option] = schema;
        }
      }
    }
  }
  return sections;
}

/**
 * The core's default `enabled_<kind>_interfaces` (the fakes and generic
 * ones) followed by the catalog's descriptors that declare
 * `enabledByDefault`, for every kind where one does: the core schema names
 * no plug-in.
 */
export function pluginConfigDefaults(catalog: DriverCatalog = DRIVER_CATALOG): PluginDefaults {
  const defaults: Record<string, string[]> = {};
  for (const kind of INTERFACE_TYPES) {
    const extra = (catalog.interfaces[kind] ?? []).filter((d) => d.enabledByDefault).map((d) => d.name);
    if (extra.length === 0) continue;
    const option = `enabled_${kind}_interfaces` as const;
    const core = configSchema.DEFAULT[option].default as readonly string[];
    defaults[option] = [...new Set([...core, ...extra])];
  }
  return { DEFAULT: defaults };
}

/** docs/config-reference.md: the core options as the conductor loads them, and every descriptor's section. */
export function renderConductorConfigReference(catalog: DriverCatalog = DRIVER_CATALOG): string {
  return renderConfigReference(pluginConfigSections(catalog), pluginConfigDefaults(catalog));
}

/**
 * loadConfig with every plug-in's section merged in: what the conductor, and
 * anything reading the conductors' configuration (the stack, the bench),
 * loads.
 */
export function loadConductorConfig(
  options: Omit<LoadConfigOptions, 'pluginSections' | 'pluginDefaults'> = {},
  catalog: DriverCatalog = DRIVER_CATALOG,
): BmaasConfig {
  return loadConfig({
    ...options,
    pluginSections: pluginConfigSections(catalog),
    pluginDefaults: pluginConfigDefaults(catalog),
  });
}
