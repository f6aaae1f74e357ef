import {
  type BmaasConfig,
  ConfigError,
  configSchema,
  INTERFACE_TYPES,
  type LoadConfigOptions,
  loadConfig,
  type PluginDefaults,
  renderConfigReference,
  type SectionSchema,
} from '@bmaas/common';
import type { DriverCatalog } from './catalog.js';
import { DRIVER_CATALOG } from './enabled-interfaces.js';

/**
 * The configuration sections the catalog's descriptors own, by section
 * name. Two descriptors claiming one section is a ConfigError, unless they are
 * of different kinds and declare the very same schema (one package's
 * interfaces sharing options, as a package's power and management interfaces may share one).
 */
export function pluginConfigSections(catalog: DriverCatalog = DRIVER_CATALOG): Record<string, SectionSchema> {
  const sections: Record<string, SectionSchema> = {};
  const owners = new Map<string, { owner: string; kind: string }>();
  for (const kind of INTERFACE_TYPES) {
    for (const descriptor of catalog.interfaces[kind] ?? []) {
      if (!descriptor.config) continue;
      const { section, options } = descriptor.config;
      const owner = `${kind} interface "${descriptor.name}"`;
      const other = owners.get(section);
      if (other && other.kind !== kind && sections[section] === options) continue;
      if (other) throw new ConfigError(`[${section}] is claimed by ${other.owner} and by ${owner}`);
      owners.set(section, { owner, kind });
      sections[section] = options;
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
